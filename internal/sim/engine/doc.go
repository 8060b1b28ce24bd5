// Package engine is the event core of the simulators: clock-free building
// blocks that know nothing of any model. A model (internal/sim's RUBBoS
// chain, internal/sim/classes' application server) owns the clock, keeps
// its entities in its own arrays and wires these together:
//
//   - time-ordered sets of pending events: EventHeap (a 4-ary heap),
//     Sources (the earliest of a fixed set of event sources), DelayQueue
//     (entries that leave after one constant delay), Wheel (a timing wheel
//     for many events of bounded delay);
//   - waiting lines: IDQueue;
//   - random numbers: Stream, one independent PCG stream per purpose and
//     entity;
//   - measurement: Level, a time-weighted count;
//   - servers: Station (a processor-sharing CPU with exponential demands
//     and stop-the-world pauses), DelayStation (an infinite server), and
//     the Schedulers of a CPU for jobs of known work: GroupSharing
//     (processor sharing, strict priority, weighted share) and RoundRobin.
//
// Entities are int32 ids and times are float64 seconds. Most types are
// values that a model embeds, so that its hot paths follow few pointers
// and allocate nothing once warm; their small methods inline into the
// model's code.
package engine

import "math"

// inf is the time of an event that will not happen.
var inf = math.Inf(1)
