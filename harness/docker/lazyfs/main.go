// lazyfs: a pass-through FUSE filesystem that can lose power. It keeps no data of its own: writes reach the backing
// directory at once, and it remembers, per file, what the file held at its last fsync; `lazyfs ctl poweroff` puts
// every file back to that and drops every later write.
//
//	lazyfs mount BACKING MOUNTPOINT SOCKET   serve until unmounted or killed
//	lazyfs ctl SOCKET poweroff|poweroff-torn|sync|dirty|full|"slow MS"|heal   print the answer as JSON
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

type node struct {
	fs.LoopbackNode
	disk *Disk
}

type handle struct {
	*fs.LoopbackFile
	disk *Disk
}

func (h *handle) fd() int {
	fd, _ := h.LoopbackFile.PassthroughFd()
	return fd
}

// PassthroughFd refuses: a kernel passthrough would send writes around the disk's bookkeeping.
func (h *handle) PassthroughFd() (int, bool) { return 0, false }

func (h *handle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	n, err := h.disk.Write(h.fd(), data, off)
	return uint32(n), fs.ToErrno(err)
}

func (h *handle) Writev(ctx context.Context, data [][]byte, off int64) (uint32, syscall.Errno) {
	var all []byte
	for _, d := range data {
		all = append(all, d...)
	}
	return h.Write(ctx, all, off)
}

func (h *handle) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	return fs.ToErrno(h.disk.Sync(h.fd()))
}

func (h *handle) Allocate(ctx context.Context, off uint64, size uint64, mode uint32) syscall.Errno {
	return syscall.ENOTSUP
}

func (n *node) wrap(fh fs.FileHandle, flags uint32) (fs.FileHandle, syscall.Errno) {
	lf, ok := fh.(*fs.LoopbackFile)
	if !ok {
		return fh, 0
	}
	h := &handle{LoopbackFile: lf, disk: n.disk}
	if flags&syscall.O_TRUNC != 0 {
		if errno := fs.ToErrno(n.disk.Truncate(h.fd(), 0)); errno != 0 {
			return nil, errno
		}
	}
	return h, 0
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fuseFlags, errno := n.LoopbackNode.Open(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	h, errno := n.wrap(fh, flags)
	return h, fuseFlags, errno
}

func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32,
	out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	inode, fh, fuseFlags, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	h, errno := n.wrap(fh, flags)
	return inode, h, fuseFlags, errno
}

func (n *node) Tmpfile(ctx context.Context, flags uint32, mode uint32,
	out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, syscall.ENOTSUP
}

// Setattr records a size change before making it; everything else passes through.
func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	h, open := f.(*handle)
	if size, ok := in.GetSize(); ok && open {
		if errno := fs.ToErrno(n.disk.Truncate(h.fd(), int64(size))); errno != 0 {
			return errno
		}
	} else if ok {
		fd, err := syscall.Open(filepath.Join(n.RootData.Path, n.Path(n.Root())), syscall.O_RDWR|syscall.O_CLOEXEC, 0)
		if err != nil {
			return fs.ToErrno(err)
		}
		err = n.disk.Truncate(fd, int64(size))
		syscall.Close(fd)
		if err != nil {
			return fs.ToErrno(err)
		}
	}
	if open {
		f = h.LoopbackFile
	}
	return n.LoopbackNode.Setattr(ctx, f, in, out)
}

func mount(backing, mountpoint, socket string) error {
	var st syscall.Stat_t
	if err := syscall.Stat(backing, &st); err != nil {
		return err
	}
	disk := NewDisk()
	root := &fs.LoopbackRoot{Path: backing, Dev: uint64(st.Dev)}
	root.NewNode = func(r *fs.LoopbackRoot, _ *fs.Inode, _ string, _ *syscall.Stat_t) fs.InodeEmbedder {
		return &node{LoopbackNode: fs.LoopbackNode{RootData: r}, disk: disk}
	}
	root.RootNode = root.NewNode(root, nil, "", &st)
	second := time.Second
	server, err := fs.Mount(mountpoint, root.RootNode, &fs.Options{
		EntryTimeout: &second, AttrTimeout: &second,
		MountOptions: fuse.MountOptions{FsName: backing, Name: "lazyfs", DirectMount: true, MaxWrite: 1 << 20},
	})
	if err != nil {
		return err
	}
	listener, err := net.Listen("unix", socket)
	if err != nil {
		server.Unmount()
		return err
	}
	go serveControl(listener, disk)
	server.Wait()
	return nil
}

func serveControl(listener net.Listener, disk *Disk) {
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	for {
		conn, err := listener.Accept()
		if err != nil {
			return
		}
		line, _ := bufio.NewReader(conn).ReadString('\n')
		var answer any
		command := strings.TrimSpace(line)
		switch command {
		case "poweroff", "poweroff-torn":
			loss, err := disk.PowerLoss(command == "poweroff-torn", rng)
			answer = map[string]any{"loss": loss, "error": errText(err)}
		case "sync":
			disk.SyncAll()
			answer = map[string]any{"synced": true}
		case "full":
			disk.Fill()
			answer = map[string]any{"full": true}
		case "heal":
			answer = map[string]any{"faults": disk.Heal()}
		case "dirty":
			answer = map[string]any{"dirty": disk.Dirty()}
		default:
			answer = map[string]any{"error": "unknown command " + command}
			if ms, err := strconv.Atoi(strings.TrimPrefix(command, "slow ")); strings.HasPrefix(command, "slow ") && err == nil {
				disk.Slow(time.Duration(ms) * time.Millisecond)
				answer = map[string]any{"slow_ms": ms}
			}
		}
		json.NewEncoder(conn).Encode(answer)
		conn.Close()
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func control(socket, command string) error {
	conn, err := net.Dial("unix", socket)
	if err != nil {
		return err
	}
	defer conn.Close()
	fmt.Fprintln(conn, command)
	answer, err := bufio.NewReader(conn).ReadString('\n')
	fmt.Print(answer)
	return err
}

func main() {
	var err error
	switch {
	case len(os.Args) == 5 && os.Args[1] == "mount":
		err = mount(os.Args[2], os.Args[3], os.Args[4])
	case len(os.Args) == 4 && os.Args[1] == "ctl":
		err = control(os.Args[2], os.Args[3])
	default:
		err = fmt.Errorf("usage: lazyfs mount BACKING MOUNTPOINT SOCKET | lazyfs ctl SOCKET COMMAND")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "lazyfs:", err)
		os.Exit(1)
	}
}
