package main

import (
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const page = 4096

// file is what a power loss would leave of one file: its size, and the durable content of each page written over
// since the file was last fsynced.
type file struct {
	mu       sync.Mutex
	fd       int              // the backing file opened again for reading and writing, for the revert
	durable  int64            // the size a power loss leaves
	zeroFrom int64            // from here to `durable` a power loss leaves zeros (a truncate grew the file)
	saved    map[int64][]byte // page number -> its durable bytes, kept before the first unsynced write over it
	written  int64            // bytes written since the last fsync
	synced   bool             // dropped by an fsync: a writer that still holds it looks again
}

// Disk tracks every file written since its last fsync. Writes pass through to the backing directory at once;
// a power loss puts each file back as it was at its last fsync. Names (create, rename, unlink) are durable at once.
type Disk struct {
	gate  sync.RWMutex // held shared by each mutation, whole by the power loss
	mu    sync.Mutex   // guards files
	files map[uint64]*file
	off   bool // after a power loss every write is dropped: the machine is down

	full    atomic.Bool  // every write and growth fails with ENOSPC
	slow    atomic.Int64 // nanoseconds each write and fsync waits first
	refused atomic.Int64 // writes refused since the last heal
	slowed  atomic.Int64 // writes and fsyncs delayed since the last heal
}

// Faults is what the disk faults did since the last heal.
type Faults struct {
	Refused int64 `json:"refused"`
	Slowed  int64 `json:"slowed"`
}

// Fill makes the disk full: writes fail with ENOSPC until Heal.
func (d *Disk) Fill() { d.full.Store(true) }

// Slow delays every write and fsync by delay until Heal.
func (d *Disk) Slow(delay time.Duration) { d.slow.Store(int64(delay)) }

// Heal ends Fill and Slow, and says what they did.
func (d *Disk) Heal() Faults {
	d.full.Store(false)
	d.slow.Store(0)
	return Faults{Refused: d.refused.Swap(0), Slowed: d.slowed.Swap(0)}
}

// fault applies the disk faults to one write (grows: whether it can need space); a nil error lets it go on.
func (d *Disk) fault(grows bool) error {
	if delay := d.slow.Load(); delay > 0 {
		d.slowed.Add(1)
		time.Sleep(time.Duration(delay))
	}
	if grows && d.full.Load() {
		d.refused.Add(1)
		return syscall.ENOSPC
	}
	return nil
}

// Loss is what a power loss dropped: files put back, bytes written to them since their last fsync, files torn.
type Loss struct {
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
	Torn  int   `json:"torn"`
}

func NewDisk() *Disk { return &Disk{files: map[uint64]*file{}} }

// track returns the file behind fd, starting its record (durable = its size now) at its first mutation.
func (d *Disk) track(fd int) (*file, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if f, ok := d.files[st.Ino]; ok {
		return f, nil
	}
	dup, err := syscall.Open(fmt.Sprintf("/proc/self/fd/%d", fd), syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := &file{fd: dup, durable: st.Size, zeroFrom: st.Size, saved: map[int64][]byte{}}
	d.files[st.Ino] = f
	return f, nil
}

// lock returns the file behind fd, locked, and not synced away since it was looked up.
func (d *Disk) lock(fd int) (*file, error) {
	for {
		f, err := d.track(fd)
		if err != nil {
			return nil, err
		}
		f.mu.Lock()
		if !f.synced {
			return f, nil
		}
		f.mu.Unlock()
	}
}

// save keeps the durable bytes of every page in [off, end) not kept yet.
func (f *file) save(off, end int64) error {
	limit := min(f.durable, f.zeroFrom)
	if off >= limit {
		return nil
	}
	for p := off / page; p*page < min(end, limit); p++ {
		if _, ok := f.saved[p]; ok {
			continue
		}
		buf := make([]byte, min(page, limit-p*page))
		n, err := syscall.Pread(f.fd, buf, p*page)
		if err != nil {
			return err
		}
		f.saved[p] = buf[:n]
	}
	return nil
}

// Write writes data at off through fd, first keeping what it overwrites of the durable content.
func (d *Disk) Write(fd int, data []byte, off int64) (int, error) {
	if err := d.fault(true); err != nil {
		return 0, err
	}
	d.gate.RLock()
	defer d.gate.RUnlock()
	if d.off {
		return len(data), nil
	}
	f, err := d.lock(fd)
	if err != nil {
		return 0, err
	}
	defer f.mu.Unlock()
	if err := f.save(off, off+int64(len(data))); err != nil {
		return 0, err
	}
	n, err := syscall.Pwrite(fd, data, off)
	f.written += int64(max(n, 0))
	return n, err
}

// Truncate sets the file's size through fd. A size is metadata, durable at once; bytes it keeps that were never
// fsynced read as zeros after a power loss.
func (d *Disk) Truncate(fd int, size int64) error {
	d.gate.RLock()
	defer d.gate.RUnlock()
	if d.off {
		return nil
	}
	f, err := d.lock(fd)
	if err != nil {
		return err
	}
	defer f.mu.Unlock()
	if err := d.fault(size > f.durable); err != nil {
		return err
	}
	if size > f.durable {
		f.zeroFrom = min(f.zeroFrom, f.durable)
	}
	f.durable = size
	f.zeroFrom = min(f.zeroFrom, size)
	for p := range f.saved {
		if p*page >= size {
			delete(f.saved, p)
		}
	}
	return syscall.Ftruncate(fd, size)
}

// Sync makes everything written to the file behind fd durable.
func (d *Disk) Sync(fd int) error {
	if err := d.fault(false); err != nil {
		return err
	}
	d.gate.RLock()
	defer d.gate.RUnlock()
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return err
	}
	d.mu.Lock()
	f, ok := d.files[st.Ino]
	if ok && !d.off {
		delete(d.files, st.Ino)
	}
	d.mu.Unlock()
	if ok && !d.off {
		f.mu.Lock() // a write that found the record before it was dropped ends first, and is covered
		f.synced = true
		syscall.Close(f.fd)
		f.mu.Unlock()
	}
	return nil
}

// SyncAll makes every file durable, as `sync` does.
func (d *Disk) SyncAll() {
	d.gate.Lock()
	defer d.gate.Unlock()
	for ino, f := range d.files {
		syscall.Close(f.fd)
		delete(d.files, ino)
	}
}

// Dirty is what a power loss now would drop.
func (d *Disk) Dirty() Loss {
	d.gate.Lock()
	defer d.gate.Unlock()
	var l Loss
	for _, f := range d.files {
		l.Files++
		l.Bytes += f.unsynced()
	}
	return l
}

func (f *file) unsynced() int64 { return f.written }

// PowerLoss puts every file back as it was at its last fsync and drops every write from now on. With tear, a file
// that grew keeps a random part (under a page) of its first unsynced bytes, as a torn write would.
func (d *Disk) PowerLoss(tear bool, rng *rand.Rand) (Loss, error) {
	d.gate.Lock()
	defer d.gate.Unlock()
	d.off = true
	var l Loss
	for ino, f := range d.files {
		lost := f.unsynced()
		kept, err := f.revert(tear, rng)
		if err != nil {
			return l, err
		}
		l.Files++
		l.Bytes += lost - kept
		if kept > 0 {
			l.Torn++
		}
		syscall.Close(f.fd)
		delete(d.files, ino)
	}
	return l, nil
}

func (f *file) revert(tear bool, rng *rand.Rand) (int64, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(f.fd, &st); err != nil {
		return 0, err
	}
	kept := int64(0)
	if tear && st.Size > f.durable && f.zeroFrom >= f.durable {
		kept = rng.Int63n(min(st.Size-f.durable, page))
	}
	if f.zeroFrom < f.durable {
		if err := syscall.Ftruncate(f.fd, f.zeroFrom); err != nil {
			return 0, err
		}
	}
	if err := syscall.Ftruncate(f.fd, f.durable+kept); err != nil {
		return 0, err
	}
	for p, b := range f.saved {
		if _, err := syscall.Pwrite(f.fd, b[:min(int64(len(b)), max(0, f.durable-p*page))], p*page); err != nil {
			return 0, err
		}
	}
	return kept, nil
}
