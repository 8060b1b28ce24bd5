package engine

// Delayed is an entity due at a time: an entry of a DelayQueue, a Wheel or
// a Station's delayed arrivals.
type Delayed struct {
	T  float64
	ID int32
}

// DelayQueue holds entities that each leave after one constant delay: they
// leave in the order they enter, so a growable ring buffer replaces a heap
// for them, O(1) both ways. The zero value is empty.
type DelayQueue struct {
	buf  []Delayed
	head int
	n    int
}

// Len is the number of entries.
func (q *DelayQueue) Len() int { return q.n }

// Push adds an entry; its time must not be before the last one's.
func (q *DelayQueue) Push(d Delayed) {
	if q.n == len(q.buf) {
		q.grow()
	}
	q.buf[(q.head+q.n)&(len(q.buf)-1)] = d
	q.n++
}

func (q *DelayQueue) grow() {
	size := 2 * len(q.buf)
	if size == 0 {
		size = 64
	}
	b := make([]Delayed, size)
	for i := 0; i < q.n; i++ {
		b[i] = q.buf[(q.head+i)&(len(q.buf)-1)]
	}
	q.buf, q.head = b, 0
}

// Front is the time of the first entry, or +Inf when empty.
func (q *DelayQueue) Front() float64 {
	if q.n == 0 {
		return inf
	}
	return q.buf[q.head].T
}

// Pop removes the first entry and returns it; the queue must not be empty.
func (q *DelayQueue) Pop() Delayed {
	d := q.buf[q.head]
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.n--
	return d
}

// IDQueue is a growable ring of entity ids: a FIFO waiting line, with an
// optional removal at a random position (PopAt). The zero value is empty.
type IDQueue struct {
	buf  []int32
	head int
	n    int
}

// Len is the number of ids waiting.
func (q *IDQueue) Len() int { return q.n }

// Push appends id.
func (q *IDQueue) Push(id int32) {
	if q.n == len(q.buf) {
		size := 2 * len(q.buf)
		if size == 0 {
			size = 16
		}
		b := make([]int32, size)
		for i := 0; i < q.n; i++ {
			b[i] = q.buf[(q.head+i)&(len(q.buf)-1)]
		}
		q.buf, q.head = b, 0
	}
	q.buf[(q.head+q.n)&(len(q.buf)-1)] = id
	q.n++
}

// Pop removes the head and returns it; the queue must not be empty.
func (q *IDQueue) Pop() int32 {
	id := q.buf[q.head]
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.n--
	return id
}

// PopAt removes the i-th waiting id (0 = head) and returns it. Waiting
// order among the rest changes (the head takes its place), which is what
// a random wake-up order allows.
func (q *IDQueue) PopAt(i int) int32 {
	m := len(q.buf) - 1
	j := (q.head + i) & m
	q.buf[j], q.buf[q.head] = q.buf[q.head], q.buf[j]
	return q.Pop()
}
