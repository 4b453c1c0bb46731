// netdelay holds the packets an iptables NFQUEUE rule hands it and lets each one through after a delay with
// jitter, in arrival order (so TCP sees latency, not reordering). With -port P it reads the Kafka frames that start
// the segments of P's connections: with -gate K it lets a connection's packets pass until one starts a request of
// API key K (with -commits, an EndTxn that commits), then holds that one and every later one of the connection;
// with -responses it holds what the listener answers instead, gated by the API key of the request answered.
// -hold keeps what it holds until SIGUSR1 (the op's end) rather than for -delay; -drop drops it, and the rest of its
// connection until SIGUSR1; -reset sends the first as a TCP reset in its place and has the rest answered with
// one, so both ends drop the connection;
// -error lets each answer to a gated request through at once with its error codes set.
// -client narrows the gate to the requests of clients whose id starts with it. With -zookeeper the frames are
// ZooKeeper's, and a gate is an opcode.
// It speaks nfnetlink_queue over netlink itself and rewrites a stats file (the fault's evidence, with the frames it
// held) several times a second; the file appearing means the queue is bound.
package main

import (
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/signal"
	"sync"
	"syscall"
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
	copyWhole       = 65535
	endTxnKey       = 26
	nfAccept        = 1
	nfDrop          = 0
	nfRepeat        = 4              // the packet goes through the hook's rules again
	attrMark        = 3              // NFQA_MARK: the mark a verdict sets
	heldUntilHeal   = 24 * time.Hour // -hold: a packet's release until SIGUSR1 comes
	netlinkFilter   = 12
	queueMaxlen     = 65536
	socketBufferLen = 16 << 20
)

type packet struct {
	id      uint32
	arrived time.Time
	release time.Time
	match   *match // the frame it starts, when it starts one netdelay can name
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
	Dropped    uint64  `json:"dropped"`
	Reset      uint64  `json:"reset"`    // packets sent on as a TCP reset, or answered with one
	Answered   uint64  `json:"answered"` // responses let through with their error codes set
	// frames held, by API key, and the first of them whole
	Matched   map[string]uint64 `json:"matched,omitempty"`
	Examples  []match           `json:"examples,omitempty"`
	Errors    uint64            `json:"errors"`
	LastError string            `json:"last_error,omitempty"`
}

type delayer struct {
	conn   *netlink.Conn
	queue  uint16
	delay  time.Duration
	jitter time.Duration
	gate   int // the API key whose request starts a connection's hold; -1: hold every packet
	// the listener port whose connections it reads (0: none, every packet is held unread), and whether it holds
	// the listener's responses (the requests only pass, noted in `pending`) rather than its requests
	port      int
	responses bool
	pending   map[string]map[int32]header
	seen      uint64 // frames held so far
	// -drop: a held packet is dropped, not delayed; -reset: it goes as a TCP reset; -hold: it waits until SIGUSR1,
	// not for the delay
	drop, reset, hold bool
	mark              uint32 // -reset: the mark that has the chain's REJECT rule answer a packet with a reset
	// with the EndTxn gate: only a request that commits starts a hold
	commits   bool
	zookeeper bool   // the frames are ZooKeeper's: a gate is an opcode, a correlation id an xid
	client    string // the prefix of the client ids whose requests the gate takes ("": every client)
	// -error: the code each ErrorCode of an answer to a gated request is set to, and the response schemas by API key
	errorCode int16
	schemas   map[int]*schema
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
	port := flag.Int("port", 0, "the listener port whose requests (or responses) it reads and holds")
	responses := flag.Bool("responses", false, "with -port: hold the listener's responses, not its requests")
	hold := flag.Bool("hold", false, "hold packets until SIGUSR1, not for -delay")
	drop := flag.Bool("drop", false, "drop the packets it would hold until SIGUSR1")
	reset := flag.Bool("reset", false, "send the packets it would hold as TCP resets until SIGUSR1")
	mark := flag.Uint("mark", 0, "with -reset: the mark the chain's REJECT rule answers with a reset")
	client := flag.String("client", "", "with -gate: only requests from client ids starting with this")
	errorCode := flag.Int("error", 0, "with -responses and -gate: set the answers' error codes to this one")
	jar := flag.String("schemas", "", "with -error: the kafka-clients jar whose response schemas it reads")
	zookeeper := flag.Bool("zookeeper", false, "with -port: the frames are ZooKeeper's, a gate an opcode")
	flag.Parse()
	answering := *errorCode != 0
	if *queue <= 0 || *queue > 65535 || *delayMs < 0 || *jitterMs < 0 || *statsPath == "" || *gate < -1 ||
		(*commits && (*gate != endTxnKey || *responses)) || *port < 0 || *port > 65535 ||
		(*responses && *port == 0) || (*gate >= 0 && *port == 0) || count(*hold, *drop, *reset) > 1 ||
		(*reset != (*mark > 0)) || *mark > 0xffffffff ||
		(*client != "" && *gate < 0) || *errorCode < -32768 || *errorCode > 32767 ||
		(answering && (!*responses || *gate < 0 || *hold || *drop || *reset || *jar == "")) ||
		(*zookeeper && (*port == 0 || *commits || *client != "" || answering)) {
		fmt.Fprintln(os.Stderr, "usage: netdelay -queue N -delay MS [-jitter MS] [-port P [-responses]] "+
			"[-gate API_KEY [-commits] [-client PREFIX]] [-error CODE -schemas JAR] [-zookeeper] [-reset -mark M] "+
			"-stats FILE (a gate needs -port; -commits, a request hold; -error, a gated hold of responses)")
		os.Exit(2)
	}
	var schemas map[int]*schema
	if answering {
		var err error
		if schemas, err = loadSchemas(*jar); err != nil {
			fail("reading the response schemas: %v", err)
		}
	}
	conn, err := netlink.Dial(netlinkFilter, nil)
	if err != nil {
		fail("netlink: %v", err)
	}
	d := &delayer{conn: conn, queue: uint16(*queue), rng: rand.New(rand.NewSource(time.Now().UnixNano())),
		delay: ms(*delayMs), jitter: ms(*jitterMs), gate: *gate, commits: *commits, port: *port, responses: *responses,
		pending: map[string]map[int32]header{}, drop: *drop, reset: *reset, hold: *hold, held: map[string]time.Time{}, wake: make(chan struct{}, 1),
		zookeeper: *zookeeper, mark: uint32(*mark), client: *client, errorCode: int16(*errorCode), schemas: schemas,
		stats: Stats{Queue: *queue, DelayMs: *delayMs, JitterMs: *jitterMs}}
	if err := d.bind(); err != nil {
		fail("binding queue %d: %v", *queue, err)
	}
	go d.release()
	heal := make(chan os.Signal, 1)
	signal.Notify(heal, syscall.SIGUSR1)
	go d.healOn(heal)
	go d.report(*statsPath)
	d.receive()
}

func count(flags ...bool) int {
	n := 0
	for _, f := range flags {
		if f {
			n++
		}
	}
	return n
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
	if d.schemas != nil {
		params = append(binary.BigEndian.AppendUint32(nil, copyWhole), copyPacket)
	} else if d.port > 0 {
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
			if d.schemas != nil {
				if m := d.answers(payload); m != nil {
					d.answer(id, payload, m)
				} else {
					d.pass(id)
				}
			} else if conn, m, ok := d.holds(payload, now); ok && (d.drop || d.reset) {
				d.dropped(id, payload, conn, m, now)
			} else if ok {
				release := d.enqueue(id, now, m)
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

// pass lets a packet through at once (a gated queue's packets before their connection's hold).
func (d *delayer) pass(id uint32) {
	if err := d.verdict(id, nfAccept); err != nil {
		d.noteError(err)
	}
}

// verdict sends packet `id`'s verdict, with the attributes that change it (a replacement packet, a mark).
func (d *delayer) verdict(id uint32, v uint32, with ...netlink.Attribute) error {
	verdict := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, v), id)
	attrs := append([]netlink.Attribute{{Type: attrVerdictHdr, Data: verdict}}, with...)
	_, err := d.conn.Send(d.message(msgVerdict, netlink.Request, attrs))
	return err
}

// dropped drops a packet it holds (-drop), and every later one of its connection until the heal. With -reset the
// first goes on as a TCP reset, reaching the far end, and each later one (a retransmission) is handed back marked
// for the chain's REJECT rule, which resets the near end.
func (d *delayer) dropped(id uint32, packet []byte, conn string, m *match, now time.Time) {
	d.mu.Lock()
	_, again := d.held[conn]
	d.mu.Unlock()
	rst, ok := resetOf(packet)
	var err error
	switch {
	case d.reset && ok && !again:
		err = d.replace(id, rst)
	case d.reset:
		err = d.refuse(id)
	default:
		err = d.verdict(id, nfDrop)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.failedLocked(err) {
		return
	}
	if d.reset {
		d.stats.Reset++
	} else {
		d.stats.Dropped++
	}
	if conn != "" {
		d.held[conn] = now.Add(heldUntilHeal)
	}
	if m != nil {
		d.record(m, 0)
	}
}

// enqueue queues a packet's release, returning when it will be.
func (d *delayer) enqueue(id uint32, now time.Time, m *match) time.Time {
	d.mu.Lock()
	release := now.Add(d.delay)
	if d.hold {
		release = now.Add(heldUntilHeal)
	}
	if d.jitter > 0 {
		release = release.Add(time.Duration((d.rng.Float64()*2 - 1) * float64(d.jitter)))
	}
	if n := len(d.waiting); n > 0 && release.Before(d.waiting[n-1].release) {
		release = d.waiting[n-1].release
	}
	d.waiting = append(d.waiting, packet{id: id, arrived: now, release: release, match: m})
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
	err := d.verdict(p.id, nfAccept)
	held := float64(time.Since(p.arrived)) / float64(time.Millisecond)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.failedLocked(err) {
		return
	}
	d.stats.Packets++
	if p.match != nil {
		d.record(p.match, held)
	}
	d.heldSum += held
	d.stats.HeldMeanMs = d.heldSum / float64(d.stats.Packets)
	if held > d.stats.HeldMaxMs {
		d.stats.HeldMaxMs = held
	}
}

func (d *delayer) noteError(err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.failedLocked(err)
}

// failedLocked counts an error, if there is one, with the lock held; it says whether there was.
func (d *delayer) failedLocked(err error) bool {
	if err != nil {
		d.stats.Errors++
		d.stats.LastError = err.Error()
	}
	return err != nil
}

// report rewrites the stats file (atomically) every 100 ms.
func (d *delayer) report(path string) {
	for {
		d.mu.Lock()
		s := d.stats
		s.Waiting = len(d.waiting)
		body, _ := json.Marshal(s)
		d.mu.Unlock()
		tmp := path + ".tmp"
		if os.WriteFile(tmp, body, 0o644) == nil {
			_ = os.Rename(tmp, path)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// healOn ends each hold when a signal comes (the op's end): every waiting packet goes through now, in order, and no
// connection stays held or dropped.
func (d *delayer) healOn(heal <-chan os.Signal) {
	for range heal {
		d.healNow(time.Now())
	}
}

func (d *delayer) healNow(now time.Time) {
	d.mu.Lock()
	for i := range d.waiting {
		d.waiting[i].release = now
	}
	clear(d.held)
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}
