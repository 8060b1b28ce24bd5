package engine

// event is one entry of an EventHeap: a value type, so pushing and popping
// allocate nothing and the heap is one contiguous array.
type event struct {
	t    float64
	id   int32 // the entity the event concerns (a user, a server)
	kind uint8
}

// EventHeap is a min-heap of events (time, entity id, kind) on time. It is
// 4-ary: four children per node halve the depth of a binary heap and keep
// the children of a node in one cache line; that is what Pop, the
// expensive operation, pays for. The zero value is an empty heap.
type EventHeap struct{ a []event }

// Top is the time of the earliest event, or +Inf when the heap is empty.
func (h *EventHeap) Top() float64 {
	if len(h.a) == 0 {
		return inf
	}
	return h.a[0].t
}

// Push adds the event of kind for entity id at time t.
func (h *EventHeap) Push(t float64, id int32, kind uint8) {
	e := event{t: t, id: id, kind: kind}
	h.a = append(h.a, e)
	a := h.a
	i := len(a) - 1
	for i > 0 {
		p := (i - 1) >> 2
		if a[p].t <= e.t {
			break
		}
		a[i] = a[p]
		i = p
	}
	a[i] = e
}

// Pop removes the earliest event and returns it; the heap must not be
// empty.
func (h *EventHeap) Pop() (t float64, id int32, kind uint8) {
	a := h.a
	top := a[0]
	n := len(a) - 1
	last := a[n]
	h.a = a[:n]
	if n == 0 {
		return top.t, top.id, top.kind
	}
	a = a[:n]
	i := 0
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		// smallest of up to four children
		m, mt := c, a[c].t
		end := c + 4
		if end > n {
			end = n
		}
		for j := c + 1; j < end; j++ {
			if a[j].t < mt {
				m, mt = j, a[j].t
			}
		}
		if last.t <= mt {
			break
		}
		a[i] = a[m]
		i = m
	}
	a[i] = last
	return top.t, top.id, top.kind
}
