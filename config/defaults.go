package config

import (
	"fmt"
	"reflect"
	"strconv"
	"time"
)

// Defaults returns a Config holding every default of the struct tags and
// nothing from the environment. The demo starts from it, so that it runs on
// embedded defaults whatever the shell exports.
func Defaults() Config {
	var c Config
	setDefaults(reflect.ValueOf(&c).Elem())
	return c
}

// setDefaults sets the default of every tagged field of the struct v, and
// of the structs it embeds (envconfig reads their fields with the same
// prefix).
func setDefaults(v reflect.Value) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if t.Field(i).Anonymous && t.Field(i).Type.Kind() == reflect.Struct {
			setDefaults(v.Field(i))
			continue
		}
		def, ok := t.Field(i).Tag.Lookup("default")
		if !ok {
			continue
		}
		if err := setDefault(v.Field(i), def); err != nil {
			// The tags are ours and a test parses every one of them.
			panic(fmt.Sprintf("config: default of %s: %v", t.Field(i).Name, err))
		}
	}
}

func setDefault(f reflect.Value, def string) error {
	switch {
	case f.Type() == reflect.TypeOf(time.Duration(0)):
		d, err := time.ParseDuration(def)
		f.SetInt(int64(d))
		return err
	case f.Kind() == reflect.String:
		f.SetString(def)
		return nil
	case f.Kind() == reflect.Int || f.Kind() == reflect.Int64:
		n, err := strconv.ParseInt(def, 10, 64)
		f.SetInt(n)
		return err
	case f.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(def)
		f.SetBool(b)
		return err
	}
	return fmt.Errorf("unsupported kind %s", f.Kind())
}
