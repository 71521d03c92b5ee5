package contain

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// attr puts the process in a new process group and, when fd is an open cgroup directory, starts it in that
// cgroup (clone3 with CLONE_INTO_CGROUP): it is never outside it, not even between fork and exec.
func attr(fd int) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	if fd >= 0 {
		a.UseCgroupFD, a.CgroupFD = true, fd
	}
	return a
}

// makeCgroup creates the cgroup dir and opens it for UseCgroupFD.
func makeCgroup(dir string) (int, error) {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return -1, err
	}
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		_ = syscall.Rmdir(dir)
		return -1, err
	}
	return fd, nil
}

// killCgroup sends SIGKILL to every process in the cgroup and its descendants (cgroup.kill, Linux 5.14).
func killCgroup(dir string) error {
	return os.WriteFile(dir+"/cgroup.kill", []byte("1"), 0)
}

// releaseWait bounds how long removeCgroup waits for killed processes to leave the cgroup: SIGKILL cannot be
// caught, so only a process stuck in the kernel (uninterruptible I/O) takes long.
const releaseWait = 5 * time.Second

// removeCgroup kills what is left in dir, waits until it is empty and removes it.
func removeCgroup(dir string) error {
	if err := killCgroup(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	deadline := time.Now().Add(releaseWait)
	pause := 50 * time.Microsecond
	for {
		err := syscall.Rmdir(dir)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("removing cgroup %s: %w", dir, err)
		}
		// The processes are dying: cgroup.events turns "populated 0" within microseconds to milliseconds.
		time.Sleep(pause)
		pause = min(2*pause, 10*time.Millisecond)
	}
}

// Detect returns this process's own cgroup v2 directory when this process can create child cgroups in it, ""
// otherwise. It is computed once per process.
var Detect = sync.OnceValue(func() string {
	dir, err := ownCgroup()
	if err != nil || Check(dir) != nil {
		return ""
	}
	return dir
})

// ownCgroup finds the directory of this process's cgroup v2: the cgroup2 mount in /proc/self/mountinfo and the
// "0::" line of /proc/self/cgroup.
func ownCgroup() (string, error) {
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	var path string
	for line := range strings.Lines(string(cg)) {
		if p, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "0::"); ok {
			path = p
		}
	}
	if !strings.HasPrefix(path, "/") {
		return "", errors.New("no cgroup v2 membership in /proc/self/cgroup")
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	root, mount, ok := cgroup2Mount(mi)
	if !ok {
		return "", errors.New("no cgroup2 mount in /proc/self/mountinfo")
	}
	rel, ok := strings.CutPrefix(path, root)
	if !ok || (rel != "" && root != "/" && rel[0] != '/') {
		return "", fmt.Errorf("the cgroup %s is outside the cgroup2 mount of %s", path, root)
	}
	return filepath.Join(mount, rel), nil
}

// cgroup2Mount returns the root and mount point of the first cgroup2 mount in a mountinfo file (proc(5)): "id
// parent major:minor root mountpoint options [optional...] - fstype source superoptions".
func cgroup2Mount(mountinfo []byte) (root, mount string, ok bool) {
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		for i := 6; i+1 < len(f); i++ {
			if f[i] == "-" {
				if f[i+1] == "cgroup2" && len(f) > 4 {
					return unescape(f[3]), unescape(f[4]), true
				}
				break
			}
		}
	}
	return "", "", false
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// cgroup2Magic is the f_type of a cgroup2 file system (CGROUP2_SUPER_MAGIC).
const cgroup2Magic = 0x63677270

// Check returns nil when dir is a cgroup v2 directory in which this process can create child cgroups that offer
// cgroup.kill, and removes them again; it creates and removes one to find out.
func Check(dir string) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("%q is not an absolute path", dir)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return err
	}
	if uint32(st.Type) != cgroup2Magic {
		return fmt.Errorf("%s is not in a cgroup v2 file system", dir)
	}
	probe := fmt.Sprintf("%s/tool-probe-%d-%d", dir, os.Getpid(), seq.Add(1))
	if err := os.Mkdir(probe, 0o755); err != nil {
		return fmt.Errorf("cannot create a child cgroup: %w", err)
	}
	defer func() { _ = syscall.Rmdir(probe) }()
	if _, err := os.Stat(probe + "/cgroup.kill"); err != nil {
		return errors.New("the kernel offers no cgroup.kill (Linux 5.14 or later needed)")
	}
	return nil
}
