package engine

// Wheel is a timing wheel for the many events of bounded, random delay
// (think times): buckets of a fixed width, each a list of chunks of
// entries, sorted only when the clock reaches them. Push and Pop are O(1)
// and touch no shared array but the bucket heads; a binary heap of
// thousands of entries pays a cache miss and a mispredicted branch per
// level instead. Chunks of a cache line, not one node per entry, make
// reading a bucket a few dependent loads rather than one per entry. An
// entry beyond the wheel's span is refused and the caller keeps it
// elsewhere.
type Wheel struct {
	inv   float64 // buckets per second
	mask  int64
	slot  []wheelSlot
	chunk []wheelChunk
	free  int32     // first free chunk, -1 if none
	cur   int64     // absolute number of the bucket being consumed
	run   []Delayed // the current bucket, sorted by time, from pos on
	pos   int
	count int // entries in buckets after cur
}

// wheelSlot is a bucket: its newest chunk (-1: empty) and that chunk's
// entries; older chunks are full.
type wheelSlot struct {
	head int32
	fill int32
}

// chunkN entries fill a 64-byte chunk.
const chunkN = 5

type wheelChunk struct {
	t    [chunkN]float64
	id   [chunkN]int32
	next int32 // the bucket's next older chunk, or the next free one; -1: none
}

// NewWheel makes a wheel of 2^bits buckets of width 1/perSecond seconds for
// about n entries at a time.
func NewWheel(n int, perSecond float64, bits uint) *Wheel {
	w := &Wheel{inv: perSecond, mask: 1<<bits - 1, slot: make([]wheelSlot, 1<<bits),
		chunk: make([]wheelChunk, 0, n/chunkN+1<<bits/4), free: -1}
	for i := range w.slot {
		w.slot[i].head = -1
	}
	return w
}

// Push adds entity id at time t >= the last popped time; false if t lies
// beyond the wheel's span.
func (w *Wheel) Push(t float64, id int32) bool {
	abs := int64(t * w.inv)
	if abs <= w.cur {
		// The bucket being consumed: insert in order (it is short).
		w.run = append(w.run, Delayed{})
		i := len(w.run) - 1
		for i > w.pos && w.run[i-1].T > t {
			w.run[i] = w.run[i-1]
			i--
		}
		w.run[i] = Delayed{T: t, ID: id}
		return true
	}
	if abs-w.cur > w.mask {
		return false
	}
	b := &w.slot[abs&w.mask]
	if b.head < 0 || b.fill == chunkN {
		c := w.free
		if c >= 0 {
			w.free = w.chunk[c].next
		} else {
			c = int32(len(w.chunk))
			w.chunk = append(w.chunk, wheelChunk{})
		}
		w.chunk[c].next = b.head
		b.head, b.fill = c, 0
	}
	k := &w.chunk[b.head]
	k.t[b.fill] = t
	k.id[b.fill] = id
	b.fill++
	w.count++
	return true
}

// Front is the time of the earliest entry, or +Inf when empty. It moves the
// wheel to the bucket of that entry.
func (w *Wheel) Front() float64 {
	if w.pos < len(w.run) {
		return w.run[w.pos].T
	}
	if w.count == 0 {
		return inf
	}
	w.run, w.pos = w.run[:0], 0
	for {
		w.cur++
		b := &w.slot[w.cur&w.mask]
		if b.head < 0 {
			continue
		}
		// Newest first, then a stable sort: entries of equal time keep
		// the order a list of single entries gave them.
		for c, n := b.head, b.fill; c >= 0; n = chunkN {
			k := &w.chunk[c]
			for i := n - 1; i >= 0; i-- {
				w.run = append(w.run, Delayed{T: k.t[i], ID: k.id[i]})
			}
			next := k.next
			k.next = w.free
			w.free = c
			c = next
		}
		b.head, b.fill = -1, 0
		w.count -= len(w.run)
		// Insertion sort: a bucket holds a few dozen entries at most.
		r := w.run
		for i := 1; i < len(r); i++ {
			d := r[i]
			j := i
			for j > 0 && r[j-1].T > d.T {
				r[j] = r[j-1]
				j--
			}
			r[j] = d
		}
		return r[0].T
	}
}

// Pop removes the earliest entry and returns it; Front must have been
// called since the last change.
func (w *Wheel) Pop() Delayed {
	d := w.run[w.pos]
	w.pos++
	return d
}

// Bucket is the number of the bucket being consumed: it changes when Front
// moves to a later one.
func (w *Wheel) Bucket() int64 { return w.cur }

// InBucket are the entries left in the bucket being consumed, earliest
// first: what the next Pops return unless earlier entries are pushed. A
// model may read them to load its entities' state ahead of their events.
func (w *Wheel) InBucket() []Delayed { return w.run[w.pos:] }
