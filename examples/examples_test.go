package examples

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/batchhook/batchhook/cpf"
	"github.com/batchhook/batchhook/submit"
)

// The counts gen-cpfs.sh documents and README "Submitting" shows.
const (
	wantValid      = 20
	wantDuplicates = 3
)

// wantInvalid are the invalid lines, by line number, and why.
var wantInvalid = []submit.Invalid{
	{Line: 8, Reason: "check_digits"},
	{Line: 14, Reason: "repeated_digits"},
	{Line: 21, Reason: "format"},
	{Line: 25, Reason: "format"},
}

// TestCPFsFileIsTheGeneratorsOutput: cpfs.txt is exactly what gen-cpfs.sh
// prints, so the documented script is the file's source.
func TestCPFsFileIsTheGeneratorsOutput(t *testing.T) {
	for _, tool := range []string{"sh", "awk"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	out, err := exec.Command("sh", "gen-cpfs.sh").Output()
	if err != nil {
		t.Fatalf("gen-cpfs.sh: %v", err)
	}
	file, err := os.ReadFile("cpfs.txt")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, file) {
		t.Fatal("cpfs.txt differs from gen-cpfs.sh's output: run sh examples/gen-cpfs.sh > examples/cpfs.txt")
	}
}

// TestCPFsFileCounts: batchhook's intake (what the daemon runs on a
// submission) finds the documented numbers of valid, duplicate and invalid
// lines, and each line's class agrees with cpf.Normalize.
func TestCPFsFileCounts(t *testing.T) {
	file, err := os.ReadFile("cpfs.txt")
	if err != nil {
		t.Fatal(err)
	}
	in, err := submit.ParseIntake(bytes.NewReader(file), submit.IntakeOptions{Format: submit.FormatLines})
	if err != nil {
		t.Fatal(err)
	}
	if in.Valid != wantValid || in.Duplicates != wantDuplicates {
		t.Errorf("valid %d, duplicates %d; want %d, %d", in.Valid, in.Duplicates, wantValid, wantDuplicates)
	}
	var got []submit.Invalid
	for _, iv := range in.Invalid {
		got = append(got, submit.Invalid{Line: iv.Line, Reason: iv.Reason})
	}
	if !slices.Equal(got, wantInvalid) {
		t.Errorf("invalid lines %v, want %v", got, wantInvalid)
	}

	// The same, line by line, with the cpf package alone.
	seen := map[string]bool{}
	valid, dups, invalid := 0, 0, 0
	lines := strings.Split(strings.TrimSuffix(string(file), "\n"), "\n")
	for i, l := range lines {
		digits, err := cpf.Normalize(l)
		switch {
		case err != nil:
			invalid++
			if !slices.ContainsFunc(wantInvalid, func(w submit.Invalid) bool { return w.Line == i+1 }) {
				t.Errorf("line %d is invalid (%v) but not documented as such", i+1, err)
			}
			if i+1 == 14 && !errors.Is(err, cpf.ErrRepeated) || i+1 == 8 && !errors.Is(err, cpf.ErrCheckDigits) {
				t.Errorf("line %d: %v, not the documented reason", i+1, err)
			}
		case seen[digits]:
			dups++
		default:
			seen[digits] = true
			valid++
		}
	}
	if len(lines) != wantValid+wantDuplicates+len(wantInvalid) || valid != wantValid || dups != wantDuplicates || invalid != len(wantInvalid) {
		t.Errorf("cpf.Normalize: %d lines, %d valid, %d duplicates, %d invalid", len(lines), valid, dups, invalid)
	}
	// Both forms appear, so the sample shows that they are one CPF.
	if !strings.Contains(string(file), ".") || !slices.ContainsFunc(lines, func(l string) bool { return len(l) == 11 }) {
		t.Error("cpfs.txt should hold both the dotted and the bare form")
	}
}
