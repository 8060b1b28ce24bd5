package engine

import (
	"math"
	"math/bits"
)

// Stream is one independent random stream (PCG, 128-bit state). A model
// keeps one per purpose and per entity, so that a change in one place (a
// pool size, a demand) does not shift the draws made anywhere else.
//
// It is math/rand/v2's PCG (128-bit LCG, DXSM output) written out here, with
// the same state, seeding and output, so that the draws are the same; the
// hand-written step is cheap enough for the compiler to inline into the
// draws, and they into the hot paths.
type Stream struct{ hi, lo uint64 }

// uint64 is the next 64-bit draw: exactly rand.PCG.Uint64.
func (s *Stream) uint64() uint64 {
	const (
		mulHi    = 2549297995355413924
		mulLo    = 4865540595714422341
		incHi    = 6364136223846793005
		incLo    = 1442695040888963407
		cheapMul = 0xda942042e4dd58b5
	)
	hi, lo := bits.Mul64(s.lo, mulLo)
	hi += s.hi*mulLo + s.lo*mulHi
	lo, c := bits.Add64(lo, incLo, 0)
	hi += incHi + c
	s.lo, s.hi = lo, hi
	hi ^= hi >> 32
	hi *= cheapMul
	hi ^= hi >> 48
	return hi * (lo | 1)
}

// NewStream derives a stream from a trial's seed, a purpose (a model's own
// numbering of what the draws are for) and an index (the entity) with
// splitmix64, so neighbouring indexes give unrelated PCG states.
func NewStream(seed, purpose, index uint64) Stream {
	a := splitmix(seed ^ splitmix(purpose<<40^index))
	b := splitmix(a ^ 0x9e3779b97f4a7c15)
	var s Stream
	s.hi, s.lo = a, b
	return s
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Float64 is uniform in [0, 1).
func (s *Stream) Float64() float64 { return float64(s.uint64()>>11) * 0x1p-53 }

// IntN is uniform in [0, n), n > 0 (Lemire's multiply-shift; the bias of at
// most n/2^64 is far below anything a trial can see).
func (s *Stream) IntN(n int) int {
	hi, _ := bits.Mul64(s.uint64(), uint64(n))
	return int(hi)
}

// Exp is exponential with mean 1, by the ziggurat method (Marsaglia and
// Tsang, 2000): one 64-bit draw and a table look-up in 99% of calls, the
// logarithm only in the tail and at wedge rejections. The common case is
// small enough to inline; the rest continues from the same draw in expSlow.
func (s *Stream) Exp() float64 {
	u := s.uint64()
	i := u & 0xff
	j := uint32(u >> 32)
	if j < zigK[i] {
		return float64(j) * zigW[i]
	}
	return s.expSlow(u)
}

// expSlow is Exp after a first draw u that fell outside its layer's box.
func (s *Stream) expSlow(u uint64) float64 {
	for {
		i := u & 0xff
		j := uint32(u >> 32)
		x := float64(j) * zigW[i]
		if j < zigK[i] {
			return x
		}
		if i == 0 {
			return zigR - math.Log(1-s.Float64())
		}
		if zigF[i]+s.Float64()*(zigF[i-1]-zigF[i]) < math.Exp(-x) {
			return x
		}
		u = s.uint64()
	}
}

// Ziggurat tables for the exponential density exp(-x), 256 layers of equal
// area v, built once from the standard constants.
const (
	zigR = 7.69711747013104972
	zigV = 3.949659822581572e-3
)

var zigK [256]uint32
var zigW, zigF [256]float64

func init() {
	const m = 1 << 32
	de, te := zigR, zigR
	q := zigV / math.Exp(-de)
	zigK[0] = uint32(de / q * m)
	zigK[1] = 0
	zigW[0] = q / m
	zigW[255] = de / m
	zigF[0] = 1
	zigF[255] = math.Exp(-de)
	for i := 254; i >= 1; i-- {
		de = -math.Log(zigV/de + math.Exp(-de))
		zigK[i+1] = uint32(de / te * m)
		te = de
		zigF[i] = math.Exp(-de)
		zigW[i] = de / m
	}
}
