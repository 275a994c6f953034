package store

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// fill sets every settable field of v (recursively) to a non-zero value
// derived from seed, so that a field the hand encoder forgets shows.
func fill(t *testing.T, v reflect.Value, seed int) {
	t.Helper()
	switch v.Kind() {
	case reflect.String:
		v.SetString([]string{"queued", "b_<1>&\"x\"\\", "ação \u2028 ok", "plain"}[seed%4])
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(seed*7 + 1))
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes([][]byte{[]byte(`{"a":1}`), []byte("{\"a\": 1}\n"), []byte("\xff<x>"), []byte("{\"a\":\"\u2028\"}")}[seed%4])
			return
		}
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fill(t, s.Index(i), seed+i)
		}
		v.Set(s)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(t, p.Elem(), seed)
		v.Set(p)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 11, 24, 10, seed%60, 5, 123456789*(seed%2), time.UTC)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(t, v.Field(i), seed+i)
			}
		}
	default:
		t.Fatalf("fill: no rule for %s", v.Kind())
	}
}

// checkSameAsJSON: the hand encoder gives the bytes json.Marshal gives, and
// they decode to b.
func checkSameAsJSON(t *testing.T, what string, b *Batch) {
	t.Helper()
	want, err := json.Marshal(b)
	if err != nil {
		t.Fatalf("%s: json.Marshal: %v", what, err)
	}
	got, err := encodeBatch(nil, b)
	if err != nil {
		t.Fatalf("%s: encodeBatch: %v", what, err)
	}
	if string(got) != string(want) {
		t.Fatalf("%s:\nencodeBatch  %s\njson.Marshal %s", what, got, want)
	}
	back, err := decodeBatch(b.ID, got)
	if err != nil {
		t.Fatalf("%s: decode: %v", what, err)
	}
	if !reflect.DeepEqual(back, b) {
		t.Fatalf("%s: decoded\n%+v\nwant\n%+v", what, back, b)
	}
}

// Every field of a record, alone and all together, encodes as json.Marshal
// encodes it and comes back unchanged.
func TestEncodeBatchMatchesEncodingJSON(t *testing.T) {
	var zero Batch
	zero.ID = "b_zero"
	checkSameAsJSON(t, "zero record", &zero)
	for seed := range 3 {
		var all Batch
		fill(t, reflect.ValueOf(&all).Elem(), seed)
		all.ID = "b_all"
		checkSameAsJSON(t, "every field set", &all)
	}
	typ := reflect.TypeOf(Batch{})
	var walk func(path string, get func(*Batch) reflect.Value, typ reflect.Type)
	walk = func(path string, get func(*Batch) reflect.Value, typ reflect.Type) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			if !f.IsExported() || f.Name == "ID" {
				continue
			}
			field := func(b *Batch) reflect.Value { return get(b).Field(i) }
			for seed := range 4 {
				b := Batch{ID: "b_one"}
				fill(t, field(&b), seed)
				checkSameAsJSON(t, path+f.Name, &b)
			}
			if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeOf(time.Time{}) {
				walk(path+f.Name+".", field, f.Type)
			}
		}
	}
	walk("", func(b *Batch) reflect.Value { return reflect.ValueOf(b).Elem() }, typ)
}

func BenchmarkEncodeBatch(b *testing.B) {
	n := wireNote("b_0123456789abcdef0123")
	rec := &Batch{ID: n.BatchID, State: StateQueued, Notification: n, NextAttemptAt: n.ReceivedAt, CreatedAt: n.ReceivedAt, UpdatedAt: n.ReceivedAt}
	b.Run("hand", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 1024)
		for b.Loop() {
			var err error
			if buf, err = encodeBatch(buf[:0], rec); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(rec); err != nil {
				b.Fatal(err)
			}
		}
	})
}
