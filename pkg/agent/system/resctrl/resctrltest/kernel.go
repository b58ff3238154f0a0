package resctrltest

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/gleaner-sh/gleaner/pkg/agent/system"
)

// Kernel is a host writer (what the executor's Options.Host takes) over a fixture host root that answers for the
// resctrl mount as the kernel does, so that tests see what the kernel would hold: making a group creates its
// schemata (a copy of the root group's) and its tasks file; writing a task id to a group's tasks file moves the task
// there from whichever group held it; removing a group moves its tasks back to the root group. Every other path is
// the plain host file system.
type Kernel struct {
	*system.HostFS
	root   string
	exited map[int]bool
}

// NewKernel returns a Kernel over the host root root (where Host.Write put the fixture).
func NewKernel(root string) *Kernel {
	return &Kernel{HostFS: system.NewHostFS(root), root: root, exited: map[int]bool{}}
}

// Exit makes task id one that has ended: writing it to a tasks file fails with ESRCH, as the kernel's write does.
func (k *Kernel) Exit(id int) { k.exited[id] = true }

// group is the resctrl group rel names ("" for the root group), and whether rel is inside the mount at all.
func group(rel string) (string, bool) {
	rel = path.Clean(rel)
	if rel == ResctrlDir {
		return "", true
	}
	g, ok := strings.CutPrefix(rel, ResctrlDir+"/")
	return g, ok
}

func (k *Kernel) file(g, name string) string { return filepath.Join(k.root, ResctrlDir, g, name) }

// Mkdir implements the executor's HostWriter.
func (k *Kernel) Mkdir(rel string) error {
	if err := k.HostFS.Mkdir(rel); err != nil {
		return err
	}
	g, ok := group(rel)
	if !ok || g == "" || strings.Contains(g, "/") {
		return nil
	}
	if _, err := os.Stat(k.file(g, "tasks")); err == nil {
		return nil // an existing group
	}
	root, err := os.ReadFile(k.file("", "schemata"))
	if err != nil {
		return err
	}
	for name, content := range map[string][]byte{"schemata": root, "tasks": nil, "cpus": []byte("0\n"), "mode": []byte("shareable\n")} {
		if err := os.WriteFile(k.file(g, name), content, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// WriteFile implements the executor's HostWriter: a task id written to a group's tasks file moves the task.
func (k *Kernel) WriteFile(rel, content string) error {
	dir, name := path.Split(path.Clean(rel))
	g, ok := group(strings.TrimSuffix(dir, "/"))
	if !ok || name != "tasks" {
		return k.HostFS.WriteFile(rel, content)
	}
	id, err := strconv.Atoi(strings.TrimSpace(content))
	if err != nil {
		return fmt.Errorf("writing %q to %s: invalid argument", content, rel)
	}
	if k.exited[id] {
		return fmt.Errorf("writing %q to %s: %w", content, rel, &os.PathError{Op: "write", Path: k.Path(rel), Err: syscall.ESRCH})
	}
	groups, err := k.groups()
	if err != nil {
		return err
	}
	for _, other := range groups {
		if err := k.editTasks(other, func(ids []int) []int {
			ids = slices.DeleteFunc(ids, func(i int) bool { return i == id })
			if other == g {
				ids = append(ids, id)
			}
			return ids
		}); err != nil {
			return err
		}
	}
	return nil
}

// Remove implements the executor's HostWriter: removing a group moves its tasks to the root group.
func (k *Kernel) Remove(rel string) error {
	g, ok := group(rel)
	if !ok || g == "" {
		return k.HostFS.Remove(rel)
	}
	ids, err := k.Tasks(g)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := k.editTasks("", func(root []int) []int { return append(root, ids...) }); err != nil {
		return err
	}
	return os.RemoveAll(filepath.Join(k.root, ResctrlDir, g))
}

// Spawn starts tasks: like every new task on a host, each id joins the root group (unless a group holds it already).
// Without resctrl mounted it does nothing.
func (k *Kernel) Spawn(ids ...int) error {
	if _, err := os.Stat(k.file("", "tasks")); os.IsNotExist(err) {
		return nil
	}
	groups, err := k.groups()
	if err != nil {
		return err
	}
	held := map[int]bool{}
	for _, g := range groups {
		in, err := k.Tasks(g)
		if err != nil {
			return err
		}
		for _, id := range in {
			held[id] = true
		}
	}
	return k.editTasks("", func(root []int) []int {
		for _, id := range ids {
			if !held[id] {
				root = append(root, id)
			}
		}
		return root
	})
}

// Tasks returns the task ids of group g ("" for the root group), in the file's order.
func (k *Kernel) Tasks(g string) ([]int, error) {
	b, err := os.ReadFile(k.file(g, "tasks"))
	if err != nil {
		return nil, err
	}
	var ids []int
	for _, f := range strings.Fields(string(b)) {
		id, err := strconv.Atoi(f)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func (k *Kernel) editTasks(g string, edit func([]int) []int) error {
	ids, err := k.Tasks(g)
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, id := range edit(ids) {
		fmt.Fprintf(&b, "%d\n", id)
	}
	return os.WriteFile(k.file(g, "tasks"), []byte(b.String()), 0o644)
}

// groups lists the root group ("") and every group below it.
func (k *Kernel) groups() ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(k.root, ResctrlDir))
	if err != nil {
		return nil, err
	}
	groups := []string{""}
	for _, e := range entries {
		if e.IsDir() && e.Name() != "info" && e.Name() != "mon_groups" && e.Name() != "mon_data" {
			groups = append(groups, e.Name())
		}
	}
	return groups, nil
}
