package store

import (
	"io/fs"
	"os"
)

func statMode(path string) (fs.FileMode, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return st.Mode().Perm(), nil
}
