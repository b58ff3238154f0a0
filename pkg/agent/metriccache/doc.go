// Package metriccache is gleaner-agent's in-memory store of what the collectors measured: a time series per
// (metric, pod, container, name) key in fixed-size rings, queried for avg, percentiles, last and count over a
// window, plus a key-value store for static information such as the node's CPU topology.
//
// Its footprint is bounded and known in advance: every series holds a fine ring (one float32 per Config.Step) and a
// coarse ring (one float32 per Config.CoarseStep, the average of the fine samples in it), both allocated once when
// the series appears. Series of pods and containers get Config.PodSlots fine slots, all other series
// Config.NodeSlots. With the defaults a pod series takes 4 x (300 + 120) bytes of samples plus about 200 bytes of
// bookkeeping, about 1.9 KiB; see Config.SeriesBytes. Series that receive no sample for the coarse span are
// dropped by the cache's garbage collection; collectors delete the series of pods that left the node at once.
package metriccache
