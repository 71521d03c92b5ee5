package contain

import "testing"

func TestCgroup2Mount(t *testing.T) {
	mi := []byte(`30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
40 30 0:37 /sub /sys/fs/cgroup/uni\040fied rw,relatime shared:9 - cgroup2 cgroup2 rw
`)
	root, mount, ok := cgroup2Mount(mi)
	if !ok || root != "/sub" || mount != "/sys/fs/cgroup/uni fied" {
		t.Fatalf("got %q %q %v", root, mount, ok)
	}
	if _, _, ok := cgroup2Mount([]byte("31 30 0:28 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n")); ok {
		t.Fatal("found a cgroup2 mount in a v1-only mountinfo")
	}
}
