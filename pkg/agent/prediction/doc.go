// Package prediction is gleaner-agent's peak prediction (seed 002's prediction module): it learns each production
// workload's peak CPU and memory and reports how much of the prod pods' requests will not be used, as the NodeMetric's
// prodReclaimableMetric, which the manager's mid plugin turns into kubernetes.io/mid-cpu and mid-memory.
//
// This package holds the predictors' arithmetic; the decaying histograms the peaks come from are in histogram/, their
// checkpoints in checkpoint/. The training loop that feeds the histograms from the metric cache and the report are
// not built yet (issue 16).
package prediction
