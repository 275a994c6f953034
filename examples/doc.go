// Package examples holds no code: cpfs.txt, the sample input of
// "batchhook submit" that README shows, and gen-cpfs.sh, the script that
// writes it. Its test keeps the two in step and checks the file's valid,
// duplicate and invalid lines with batchhook's own intake.
package examples
