package engine

// Level is a time-weighted count: busy units of a pool, jobs in a server.
// It integrates the count and the time spent at or above its size (full),
// which is what a per-second sampler like SysStat averages to.
type Level struct {
	v     int32
	size  int32 // full when v >= size; 0 = no size
	last  float64
	area  float64
	fullT float64
}

// NewLevel is a level of 0 that is full at size (0: never full).
func NewLevel(size int32) Level { return Level{size: size} }

// Value is the count now.
func (l *Level) Value() int32 { return l.v }

// Size is the count at which the level is full.
func (l *Level) Size() int32 { return l.size }

// set changes the count to v at time now.
func (l *Level) set(now float64, v int32) {
	dt := now - l.last
	l.area += float64(l.v) * dt
	if l.size > 0 && l.v >= l.size {
		l.fullT += dt
	}
	l.last = now
	l.v = v
}

// Add changes the count by d at time now; d = 0 closes the integrals at now.
func (l *Level) Add(now float64, d int32) { l.set(now, l.v+d) }

// Restart forgets the integrals: the measured window begins at now.
func (l *Level) Restart(now float64) { l.last, l.area, l.fullT = now, 0, 0 }

// Area is the integral of the count over time since Restart, up to the
// last change.
func (l *Level) Area() float64 { return l.area }

// AreaAt is the integral of the count from Restart to now (>= the last
// change), without closing the integral there: the closed integral would
// be summed in other pieces, and its rounding would differ from a run
// that never looked.
func (l *Level) AreaAt(now float64) float64 { return l.area + float64(l.v)*(now-l.last) }

// FullTimeAt is the time spent full from Restart to now (>= the last
// change), without closing the integral (see AreaAt).
func (l *Level) FullTimeAt(now float64) float64 {
	if l.size > 0 && l.v >= l.size {
		return l.fullT + (now - l.last)
	}
	return l.fullT
}

// FullTime is the time spent full since Restart, up to the last change.
func (l *Level) FullTime() float64 { return l.fullT }
