package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// minMemoryLimit is the smallest memory limit accepted: below it the
// garbage collector would run almost without pause.
const minMemoryLimit = 32 << 20

// MemoryLimitBytes returns MEMORY_LIMIT in bytes, and false when it is 0
// or off (no limit set by batchhook).
func (c *Config) MemoryLimitBytes() (int64, bool) {
	n, err := parseSize(c.MemoryLimit)
	if err != nil || n == 0 {
		return 0, false
	}
	return n, true
}

func validMemoryLimit(s string) bool {
	n, err := parseSize(s)
	return err == nil && (n == 0 || n >= minMemoryLimit)
}

// sizeUnits are the suffixes parseSize accepts, longest first. The binary
// ones are what GOMEMLIMIT uses; the decimal ones are accepted too.
var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"B", 1},
}

// parseSize reads a byte size: a whole number with an optional unit
// (256MiB, 1GiB, 500MB, 1048576), or "off" for 0.
func parseSize(s string) (int64, error) {
	if strings.EqualFold(s, "off") {
		return 0, nil
	}
	num, mult := s, int64(1)
	for _, u := range sizeUnits {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			num, mult = v, u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a size", s)
	}
	if n > (1<<62)/mult {
		return 0, errors.New("size too large")
	}
	return n * mult, nil
}
