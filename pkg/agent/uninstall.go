package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// +kubebuilder:rbac:groups=apps,namespace=gleaner-system,resources=daemonsets,resourceNames=gleaner-agent,verbs=get

// daemonSets is the resource the uninstall check reads: only the agent's DaemonSet's metadata.
var daemonSets = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"}

// uninstallCheck says whether the agent stops because Gleaner is being uninstalled from the node, from what the API
// server says of the agent's DaemonSet, and why. An uninstall (helm uninstall, kubectl delete -k, deleting the
// DaemonSet or its namespace) deletes the DaemonSet before its pods, and the agent's RBAC and service account soon
// after; a rolling update, an eviction, a deleted pod or a node going down leave the DaemonSet in place:
//
//   - gone (404), or being deleted (a deletionTimestamp): an uninstall;
//   - the agent may no longer read it (403: its RoleBinding is gone) or is no longer known (401: its service
//     account is gone): an uninstall under way;
//   - there, not being deleted: a restart of some kind, nothing to restore;
//   - no answer (the API server unreachable, a timeout): unknown, and the node is left as it is, as a restart
//     would need it.
type uninstallCheck func(ctx context.Context) (bool, string)

// newUninstallCheck is the uninstallCheck of the options' DaemonSet, or nil when they turn it off or name none.
func newUninstallCheck(cfg *rest.Config, o UninstallOptions) (uninstallCheck, error) {
	if !o.Restore || o.DaemonSet == "" || o.Namespace == "" {
		return nil, nil
	}
	return daemonSetCheck(cfg, o.Namespace, o.DaemonSet)
}

// daemonSetCheck is the uninstallCheck of the DaemonSet namespace/name, read with cfg's credentials.
func daemonSetCheck(cfg *rest.Config, namespace, name string) (uninstallCheck, error) {
	c, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the client of the uninstall check: %w", err)
	}
	return func(ctx context.Context) (bool, string) {
		ds, err := c.Resource(daemonSets).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
		return isUninstall(namespace+"/"+name, ds, err)
	}, nil
}

// isUninstall reads the answer to a GET of the DaemonSet named ref (ds, or err) as uninstallCheck says.
func isUninstall(ref string, ds *metav1.PartialObjectMetadata, err error) (bool, string) {
	switch {
	case apierrors.IsNotFound(err):
		return true, "DaemonSet " + ref + " is gone"
	case apierrors.IsForbidden(err):
		return true, "the agent may no longer read DaemonSet " + ref + " (its RBAC is gone)"
	case apierrors.IsUnauthorized(err):
		return true, "the API server no longer knows the agent's service account"
	case err != nil:
		return false, fmt.Sprintf("cannot read DaemonSet %s (%v): leaving the node as it is", ref, err)
	case ds.DeletionTimestamp != nil:
		return true, "DaemonSet " + ref + " is being deleted"
	}
	return false, "DaemonSet " + ref + " is in place: a restart, not an uninstall"
}

// restoreOnUninstall runs after the modules have stopped: when check says that Gleaner is being uninstalled, the QoS
// plugins give the node back what they wrote (qosmanager.Manager.Restore) and, once they all did, the state
// directory is emptied (the originals it kept are written back by then). It is bounded by the options' Timeout.
func (a *Agent) restoreOnUninstall(ctx context.Context, check uninstallCheck) error {
	o := a.opts.Uninstall
	if !o.Restore || check == nil {
		return nil
	}
	log := klog.FromContext(ctx)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.Timeout)
	defer cancel()
	uninstall, why := check(ctx)
	if !uninstall {
		log.Info("stopping without restoring the node", "reason", why)
		return nil
	}
	log.Info("uninstall: giving the node back what the QoS plugins wrote", "reason", why, "plugins", a.QoS.Names())
	if err := a.QoS.Restore(ctx); err != nil {
		return fmt.Errorf("uninstall (%s): restoring the node: %w; %s kept for another try", why, err, a.opts.StateDir)
	}
	if err := emptyDir(a.opts.StateDir); err != nil {
		return fmt.Errorf("uninstall (%s): the node is restored, but emptying %s: %w", why, a.opts.StateDir, err)
	}
	log.Info("uninstall: node restored and state directory emptied", "stateDir", a.opts.StateDir)
	return nil
}

// emptyDir removes what dir holds, leaving dir itself (a hostPath mount point); a missing dir is empty.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		errs = append(errs, os.RemoveAll(filepath.Join(dir, e.Name())))
	}
	return errors.Join(errs...)
}
