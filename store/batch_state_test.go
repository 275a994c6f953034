package store

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// errRollback ends a test transaction without committing it.
var errRollback = errors.New("roll back")

// trySetState moves a batch in state from to to in a transaction it rolls
// back, and returns setState's error.
func trySetState(t *testing.T, s *Store, from, to State) error {
	t.Helper()
	var got error
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := &Batch{ID: "b1", State: from, CreatedAt: t0}
		got = setState(tx, b, to)
		if got == nil && b.State != to {
			t.Errorf("%s → %s: allowed but the batch is %s", stateName(from), stateName(to), b.State)
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatal(err)
	}
	return got
}

// Every move the table has is allowed, every other one is refused with
// ErrTransition naming both states, and staying put is no move.
func TestSetStateFollowsTheTransitionTable(t *testing.T) {
	s := openTest(t, t.TempDir())
	for _, from := range append([]State{""}, States...) {
		for _, to := range States {
			err := trySetState(t, s, from, to)
			switch {
			case from == to || allowed(from, to):
				if err != nil {
					t.Errorf("%s → %s is in the table but refused: %v", stateName(from), stateName(to), err)
				}
			case !errors.Is(err, ErrTransition):
				t.Errorf("%s → %s is not in the table: err = %v, want ErrTransition", stateName(from), stateName(to), err)
			case !strings.Contains(err.Error(), stateName(from)+" → "+stateName(to)):
				t.Errorf("the refusal %q does not name %s → %s", err, stateName(from), stateName(to))
			}
		}
	}
	for _, m := range [][2]State{
		{StateQueued, StateExported},    // an export without a fetch
		{StateSubmitted, StateFetching}, // a fetch without a notification
		{StatePurged, StateExported},    // a tombstone back to an export
		{StateFetching, StatePurged},    // Finish can only export or abandon
		{"", StateFetching},
	} {
		if err := trySetState(t, s, m[0], m[1]); !errors.Is(err, ErrTransition) {
			t.Errorf("%s → %s: err = %v, want ErrTransition", stateName(m[0]), stateName(m[1]), err)
		}
	}
}

// The diagram in State's doc comment and the table are the same arrows:
// each line "a | b ──who──▶ c | d (note)" is read as the moves from each
// of a, b to each of c, d.
func TestTheStateDiagramIsTheTransitionTable(t *testing.T) {
	src, err := os.ReadFile("batch_state.go")
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]State{"(none)": ""}
	for _, st := range States {
		byName[string(st)] = st
	}
	state := func(field string) State {
		word := strings.Fields(field)[0] // "abandoned with no notification recorded"
		st, ok := byName[word]
		if !ok {
			t.Fatalf("the diagram names an unknown state %q", field)
		}
		return st
	}
	drawn := map[State][]State{}
	lines := 0
	for line := range strings.SplitSeq(string(src), "\n") {
		line, ok := strings.CutPrefix(line, "//\t")
		if !ok || !strings.Contains(line, "──▶") {
			continue
		}
		lines++
		left, right, _ := strings.Cut(line, "──")
		_, right, _ = strings.Cut(right, "──▶")
		for f := range strings.SplitSeq(left, "|") {
			for to := range strings.SplitSeq(right, "|") {
				from, to := state(f), state(to)
				if from != to && !slices.Contains(drawn[from], to) {
					drawn[from] = append(drawn[from], to)
				}
			}
		}
	}
	if lines == 0 {
		t.Fatal("no diagram found in batch_state.go")
	}
	for _, from := range append([]State{""}, States...) {
		d, tb := slices.Clone(drawn[from]), slices.Clone(transitions[from])
		slices.Sort(d)
		slices.Sort(tb)
		if !slices.Equal(d, tb) {
			t.Errorf("from %s: the diagram draws %v, the table has %v", stateName(from), d, tb)
		}
	}
}
