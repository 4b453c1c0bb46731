// netdelay holds the packets an iptables NFQUEUE rule hands it and lets each one through after a delay with
// jitter, in arrival order (so TCP sees latency, not reordering). With -gate K it lets a TCP connection's packets
// pass until one starts a Kafka request of API key K, then holds that one and every later one of the connection;
// with -commits as well, only an EndTxn request that commits its transaction starts the hold.
// It speaks nfnetlink_queue over netlink itself and rewrites a stats file (the fault's evidence) several times a
// second; the file appearing means the queue is bound.
package main

import (
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"sync"
	"time"

	"github.com/mdlayher/netlink"
)

// nfnetlink_queue constants (linux/netfilter/nfnetlink_queue.h).
const (
	subsysQueue     = 3
	msgPacket       = 0
	msgVerdict      = 1
	msgConfig       = 2
	attrPacketHdr   = 1
	attrPayload     = 10
	attrVerdictHdr  = 2
	cfgCmd          = 1
	cfgParams       = 2
	cfgQueueMaxlen  = 3
	cmdBind         = 1
	copyMeta        = 1
	copyPacket      = 2
	copyRange       = 512 // enough for the IP and TCP headers, a Kafka request header and an EndTxn body
	endTxnKey       = 26
	nfAccept        = 1
	netlinkFilter   = 12
	queueMaxlen     = 65536
	socketBufferLen = 16 << 20
)

type packet struct {
	id      uint32
	arrived time.Time
	release time.Time
}

// Stats is what the file says: the queue, the delay asked for, and what was done.
type Stats struct {
	Queue      int     `json:"queue"`
	DelayMs    float64 `json:"delay_ms"`
	JitterMs   float64 `json:"jitter_ms"`
	Packets    uint64  `json:"packets"`
	HeldMeanMs float64 `json:"held_mean_ms"`
	HeldMaxMs  float64 `json:"held_max_ms"`
	Waiting    int     `json:"waiting"`
	Gated      uint64  `json:"gated"` // connections held from a request of the gate's API key on
	Errors     uint64  `json:"errors"`
	LastError  string  `json:"last_error,omitempty"`
}

type delayer struct {
	conn   *netlink.Conn
	queue  uint16
	delay  time.Duration
	jitter time.Duration
	gate   int // the API key whose request starts a connection's hold; -1: hold every packet
	// with the EndTxn gate: only a request that commits starts a hold
	commits bool
	// with a gate: each held connection (source address and port) and when its last held packet goes through; it is
	// held until then, so a connection's hold ends once what it held has landed
	held map[string]time.Time
	rng  *rand.Rand

	mu      sync.Mutex
	waiting []packet
	wake    chan struct{}
	stats   Stats
	heldSum float64
}

func main() {
	queue := flag.Int("queue", 0, "NFQUEUE number to bind")
	delayMs := flag.Float64("delay", 0, "delay in milliseconds")
	jitterMs := flag.Float64("jitter", 0, "jitter in milliseconds (uniform, plus or minus)")
	statsPath := flag.String("stats", "", "file to keep the stats in")
	gate := flag.Int("gate", -1, "hold a connection only from its first request of this Kafka API key on")
	commits := flag.Bool("commits", false, "with -gate 26 (EndTxn): only from its first EndTxn that commits on")
	flag.Parse()
	if *queue <= 0 || *queue > 65535 || *delayMs < 0 || *jitterMs < 0 || *statsPath == "" || *gate < -1 ||
		(*commits && *gate != endTxnKey) {
		fmt.Fprintln(os.Stderr, "usage: netdelay -queue N -delay MS [-jitter MS] [-gate API_KEY [-commits]] -stats FILE")
		os.Exit(2)
	}
	conn, err := netlink.Dial(netlinkFilter, nil)
	if err != nil {
		fail("netlink: %v", err)
	}
	d := &delayer{conn: conn, queue: uint16(*queue), rng: rand.New(rand.NewSource(time.Now().UnixNano())),
		delay: ms(*delayMs), jitter: ms(*jitterMs), gate: *gate, commits: *commits, held: map[string]time.Time{}, wake: make(chan struct{}, 1),
		stats: Stats{Queue: *queue, DelayMs: *delayMs, JitterMs: *jitterMs}}
	if err := d.bind(); err != nil {
		fail("binding queue %d: %v", *queue, err)
	}
	go d.release()
	go d.report(*statsPath)
	d.receive()
}

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "netdelay: "+format+"\n", args...)
	os.Exit(1)
}

// bind takes the queue and asks for packet metadata only (ids), or with a gate for each packet's first bytes.
func (d *delayer) bind() error {
	if err := d.conn.SetReadBuffer(socketBufferLen); err != nil {
		return err
	}
	maxlen := binary.BigEndian.AppendUint32(nil, queueMaxlen)
	params := []byte{0, 0, 0, 0, copyMeta}
	if d.gate >= 0 {
		params = append(binary.BigEndian.AppendUint32(nil, copyRange), copyPacket)
	}
	for _, attrs := range [][]netlink.Attribute{
		{{Type: cfgCmd, Data: []byte{cmdBind, 0, 0, 0}}},
		{{Type: cfgParams, Data: params}, {Type: cfgQueueMaxlen, Data: maxlen}},
	} {
		if _, err := d.conn.Execute(d.message(msgConfig, netlink.Request|netlink.Acknowledge, attrs)); err != nil {
			return err
		}
	}
	return nil
}

func (d *delayer) message(kind int, flags netlink.HeaderFlags, attrs []netlink.Attribute) netlink.Message {
	body, err := netlink.MarshalAttributes(attrs)
	if err != nil {
		fail("encoding: %v", err)
	}
	header := []byte{0, 0, byte(d.queue >> 8), byte(d.queue)} // nfgenmsg: AF_UNSPEC, version 0, queue (big-endian)
	return netlink.Message{Header: netlink.Header{Type: netlink.HeaderType(subsysQueue<<8 | kind), Flags: flags},
		Data: append(header, body...)}
}

// receive reads packet notices and queues each one's release time: its arrival plus the delay and a jitter draw,
// never before the packet ahead of it.
func (d *delayer) receive() {
	for {
		msgs, err := d.conn.Receive()
		if err != nil {
			d.noteError(err)
			continue
		}
		now := time.Now()
		for _, m := range msgs {
			if int(m.Header.Type) != subsysQueue<<8|msgPacket || len(m.Data) < 4 {
				continue
			}
			id, payload, ok := packetOf(m.Data[4:])
			if !ok {
				continue
			}
			if conn, ok := d.holds(payload, now); ok {
				release := d.enqueue(id, now)
				if conn != "" {
					d.mu.Lock()
					d.held[conn] = release
					d.mu.Unlock()
				}
			} else {
				d.pass(id)
			}
		}
	}
}

// packetOf reads a packet notice's id and, when asked for, the packet's first bytes.
func packetOf(data []byte) (uint32, []byte, bool) {
	attrs, err := netlink.UnmarshalAttributes(data)
	if err != nil {
		return 0, nil, false
	}
	var id uint32
	var payload []byte
	found := false
	for _, a := range attrs {
		switch {
		case a.Type&0x3fff == attrPacketHdr && len(a.Data) >= 4:
			id, found = binary.BigEndian.Uint32(a.Data[:4]), true
		case a.Type&0x3fff == attrPayload:
			payload = a.Data
		}
	}
	return id, payload, found
}

// holds says whether a packet waits, and of which gated connection it is: every packet without a gate; with one, a
// packet of a connection held now, or one that starts a request of the gate's API key (which holds its connection).
func (d *delayer) holds(packet []byte, now time.Time) (string, bool) {
	if d.gate < 0 {
		return "", true
	}
	conn, data, ok := tcpData(packet)
	if !ok {
		return "", false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if until, held := d.held[conn]; held && now.Before(until) {
		return conn, true
	}
	delete(d.held, conn)
	// a request starts with its size (int32), then its API key and version (int16 each)
	if len(data) >= 8 && int(binary.BigEndian.Uint16(data[4:6])) == d.gate && int32(binary.BigEndian.Uint32(data[:4])) > 4 &&
		(!d.commits || endTxnCommits(data)) {
		d.stats.Gated++
		return conn, true
	}
	return "", false
}

// endTxnCommits says whether data, the start of an EndTxn request, commits its transaction: its Committed field
// follows the header, the transactional id, the producer id and the epoch (flexible encodings from version 3 on).
func endTxnCommits(data []byte) bool {
	if len(data) < 14 {
		return false
	}
	flexible := binary.BigEndian.Uint16(data[6:8]) >= 3
	p := 14 + max(int(int16(binary.BigEndian.Uint16(data[12:14]))), 0) // the client id, a nullable string
	if flexible {
		p = skipTags(data, p)
	}
	if p < 0 || p+2 > len(data) {
		return false
	}
	if flexible { // a compact string: its length plus one, as an unsigned varint
		n, size := binary.Uvarint(data[p:])
		if size <= 0 || n == 0 || n > uint64(len(data)) {
			return false
		}
		p += size + int(n) - 1
	} else {
		p += 2 + int(int16(binary.BigEndian.Uint16(data[p:p+2])))
	}
	p += 8 + 2 // the producer id and epoch
	return p >= 0 && p < len(data) && data[p] == 1
}

// skipTags is where a flexible header's tagged fields, starting at p, end; -1 if they run past data.
func skipTags(data []byte, p int) int {
	if p >= len(data) {
		return -1
	}
	count, size := binary.Uvarint(data[p:])
	if size <= 0 {
		return -1
	}
	p += size
	for ; count > 0; count-- {
		for _, skip := range []bool{false, true} { // the tag, then the size of the data it skips
			if p >= len(data) {
				return -1
			}
			n, size := binary.Uvarint(data[p:])
			if size <= 0 || n > uint64(len(data)) {
				return -1
			}
			p += size
			if skip {
				p += int(n)
			}
		}
	}
	return p
}

// tcpData is a TCP packet's connection (source address and port) and the start of its data, for IPv4 and for
// IPv6 without extension headers.
func tcpData(p []byte) (string, []byte, bool) {
	var src []byte
	var tcp []byte
	switch {
	case len(p) >= 20 && p[0]>>4 == 4 && p[9] == 6:
		ihl := int(p[0]&0x0f) * 4
		if len(p) < ihl+20 {
			return "", nil, false
		}
		src, tcp = p[12:16], p[ihl:]
	case len(p) >= 60 && p[0]>>4 == 6 && p[6] == 6:
		src, tcp = p[8:24], p[40:]
	default:
		return "", nil, false
	}
	off := int(tcp[12]>>4) * 4
	if off < 20 || len(tcp) < off {
		return "", nil, false
	}
	return fmt.Sprintf("%x:%d", src, binary.BigEndian.Uint16(tcp[0:2])), tcp[off:], true
}

// pass lets a packet through at once (a gated queue's packets before their connection's hold).
func (d *delayer) pass(id uint32) {
	verdict := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, nfAccept), id)
	if _, err := d.conn.Send(d.message(msgVerdict, netlink.Request, []netlink.Attribute{{Type: attrVerdictHdr, Data: verdict}})); err != nil {
		d.noteError(err)
	}
}

// enqueue queues a packet's release, returning when it will be.
func (d *delayer) enqueue(id uint32, now time.Time) time.Time {
	d.mu.Lock()
	release := now.Add(d.delay)
	if d.jitter > 0 {
		release = release.Add(time.Duration((d.rng.Float64()*2 - 1) * float64(d.jitter)))
	}
	if n := len(d.waiting); n > 0 && release.Before(d.waiting[n-1].release) {
		release = d.waiting[n-1].release
	}
	d.waiting = append(d.waiting, packet{id: id, arrived: now, release: release})
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
	return release
}

// release sends each waiting packet's accept verdict at its release time.
func (d *delayer) release() {
	for {
		d.mu.Lock()
		if len(d.waiting) == 0 {
			d.mu.Unlock()
			<-d.wake
			continue
		}
		head := d.waiting[0]
		if wait := time.Until(head.release); wait > 0 {
			d.mu.Unlock()
			select {
			case <-time.After(wait):
			case <-d.wake:
			}
			continue
		}
		d.waiting = d.waiting[1:]
		d.mu.Unlock()
		d.accept(head)
	}
}

func (d *delayer) accept(p packet) {
	verdict := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, nfAccept), p.id)
	_, err := d.conn.Send(d.message(msgVerdict, netlink.Request, []netlink.Attribute{{Type: attrVerdictHdr, Data: verdict}}))
	held := float64(time.Since(p.arrived)) / float64(time.Millisecond)
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		d.stats.Errors++
		d.stats.LastError = err.Error()
		return
	}
	d.stats.Packets++
	d.heldSum += held
	d.stats.HeldMeanMs = d.heldSum / float64(d.stats.Packets)
	if held > d.stats.HeldMaxMs {
		d.stats.HeldMaxMs = held
	}
}

func (d *delayer) noteError(err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stats.Errors++
	d.stats.LastError = err.Error()
}

// report rewrites the stats file (atomically) every 100 ms.
func (d *delayer) report(path string) {
	for {
		d.mu.Lock()
		s := d.stats
		s.Waiting = len(d.waiting)
		d.mu.Unlock()
		body, _ := json.Marshal(s)
		tmp := path + ".tmp"
		if os.WriteFile(tmp, body, 0o644) == nil {
			_ = os.Rename(tmp, path)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
