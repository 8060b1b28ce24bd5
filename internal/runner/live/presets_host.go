package live

// hostPresets read a server's CPU from what a deployment already runs, beside
// the testbed's own exporter (the cgroup preset).
var hostPresets = map[string]Queries{}
