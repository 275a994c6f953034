package powerloss

// extents is a sorted set of disjoint, non-adjacent byte ranges [start,
// end): the parts of a file written since its last sync, which the next
// sync copies into the durable image. Tracking them keeps a sync of a
// large file (bbolt's, tens of MB) to the pages the commit wrote.
type extents []extent

type extent struct{ start, end int64 }

// add merges [start, end) into the set.
func (x *extents) add(start, end int64) {
	if start >= end {
		return
	}
	s := *x
	// i: the first range that ends at or after start (it may touch the new one).
	i := 0
	for i < len(s) && s[i].end < start {
		i++
	}
	j := i
	for j < len(s) && s[j].start <= end {
		start = min(start, s[j].start)
		end = max(end, s[j].end)
		j++
	}
	merged := extent{start, end}
	if i == j {
		s = append(s, extent{})
		copy(s[i+1:], s[i:])
		s[i] = merged
	} else {
		s[i] = merged
		s = append(s[:i+1], s[j:]...)
	}
	*x = s
}
