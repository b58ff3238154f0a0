// Package prediction is gleaner-agent's peak prediction (the counterpart of Koordinator's koordlet prediction module): it learns each production
// workload's peak CPU and memory and reports how much of the prod pods' requests will not be used, as the NodeMetric's
// prodReclaimableMetric, which the manager's mid plugin turns into kubernetes.io/mid-cpu and mid-memory.
//
// Server (server.go) trains the models every minute from the metric cache: one per prod pod, one for the prod band
// (the per-sample sum of the prod pods) and one for the system part, each a decaying CPU and memory histogram
// (model.go); it drops a gone pod's model after ModelExpiry, saves the models to checkpoint files and loads them at
// start, and predicts from them with the predictors' arithmetic (predictor.go). The decaying histograms are in
// histogram/, the checkpoint files in checkpoint/.
package prediction
