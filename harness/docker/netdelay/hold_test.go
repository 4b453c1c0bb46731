package main

import (
	"encoding/binary"
	"testing"
	"time"
)

// request builds a frame of a request header (version 1, or 2 with an empty tag buffer) and a short body.
func request(key, version uint16, corr uint32, client string, flexible bool) []byte {
	b := binary.BigEndian.AppendUint16(nil, key)
	b = binary.BigEndian.AppendUint16(b, version)
	b = binary.BigEndian.AppendUint32(b, corr)
	b = binary.BigEndian.AppendUint16(b, uint16(len(client)))
	b = append(b, client...)
	if flexible {
		b = append(b, 0)
	}
	b = append(b, 1, 2, 3, 4)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

// response builds a frame of a response header (version 0, or 1 with an empty tag buffer) and a short body.
func response(corr uint32, flexible bool) []byte {
	b := binary.BigEndian.AppendUint32(nil, corr)
	if flexible {
		b = append(b, 0)
	}
	b = append(b, 0, 0, 0, 0)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

// answer wraps a response in IPv4 and TCP headers from 172.25.0.4, port 9092, to the client of ipv4.
func answer(frame []byte) []byte {
	p := ipv4(frame)
	copy(p[12:16], []byte{172, 25, 0, 4})
	copy(p[16:20], []byte{172, 25, 0, 3})
	binary.BigEndian.PutUint16(p[20:22], 9092)
	binary.BigEndian.PutUint16(p[22:24], 40000)
	return p
}

func TestEveryRequestHeaderVersionIsRead(t *testing.T) {
	for key := uint16(0); key <= maxAPIKey; key++ {
		for version := uint16(0); version <= maxVersion; version++ {
			for _, flexible := range []bool{false, true} {
				h, ok := requestHeader(request(key, version, 77, "rlmm-producer", flexible))
				if !ok || h.APIKey != int(key) || h.Version != int(version) || h.Corr != 77 || h.Client != "rlmm-producer" {
					t.Fatalf("key %d v%d flexible %v read as %+v, %v", key, version, flexible, h, ok)
				}
			}
		}
	}
	for _, flexible := range []bool{false, true} {
		if corr, ok := responseCorrelation(response(1<<31+5, flexible)); !ok || corr != -(1<<31)+5 {
			t.Errorf("response header (flexible %v) read as %d, %v", flexible, corr, ok)
		}
	}
}

func TestCutAndMalformedFramesAreNotRead(t *testing.T) {
	whole := request(0, 11, 9, "c", true)
	for n := 0; n < requestFixed; n++ {
		if _, ok := requestHeader(whole[:n]); ok {
			t.Fatalf("a request cut at %d bytes was read", n)
		}
	}
	if h, ok := requestHeader(whole[:requestFixed]); !ok || h.Client != "" {
		t.Errorf("a header whose client id is cut off read as %+v, %v", h, ok)
	}
	for name, bad := range map[string][]byte{
		"negative key":         request(0xffff, 1, 1, "c", false),
		"key past the table":   request(maxAPIKey+1, 1, 1, "c", false),
		"version past the max": request(0, maxVersion+1, 1, "c", false),
		"size below a header":  append([]byte{0, 0, 0, 3}, whole[4:]...),
		"size past the limit":  append([]byte{0x7f, 0xff, 0xff, 0xff}, whole[4:]...),
		"client id past size":  append(append([]byte{}, whole[:12]...), append([]byte{0x7f, 0}, whole[14:]...)...),
	} {
		if _, ok := requestHeader(bad); ok {
			t.Errorf("%s was read as a request", name)
		}
	}
	for n := 0; n < 8; n++ {
		if _, ok := responseCorrelation(response(3, false)[:n]); ok {
			t.Fatalf("a response cut at %d bytes was read", n)
		}
	}
	if _, ok := responseCorrelation([]byte{0, 0, 0, 2, 0, 0, 0, 1}); ok {
		t.Error("a response too small for its correlation id was read")
	}
	if _, ok := tcpSegment([]byte{0x45, 0, 0}, 9092); ok {
		t.Error("a cut IPv4 header was read")
	}
}

func TestAResponseHoldTakesOnlyTheAnswersToItsAPIKey(t *testing.T) {
	d := &delayer{gate: 0, port: 9092, responses: true, held: map[string]time.Time{},
		pending: map[string]map[int32]header{}}
	now := time.Now()
	for corr, key := range map[uint32]uint16{1: 3, 2: 0} { // a Metadata request, then a Produce
		if _, _, held := d.holds(ipv4(request(key, 9, corr, "rlmm", true)), now); held {
			t.Fatalf("request %d of key %d was held on a response hold", corr, key)
		}
	}
	if _, _, held := d.holds(answer(response(1, true)), now); held {
		t.Error("the Metadata response was held")
	}
	conn, m, held := d.holds(answer(response(2, false)), now)
	if !held || conn != "ac190003:40000" || m == nil || m.APIKey != 0 || !m.Response || m.Client != "rlmm" {
		t.Fatalf("the Produce response was not held as a match: %q %+v %v", conn, m, held)
	}
	if _, _, held := d.holds(answer(response(2, false)), now); held {
		t.Error("a response whose request was answered already was held")
	}
	if d.stats.Gated != 1 {
		t.Errorf("gated %d connections, not 1", d.stats.Gated)
	}
}

func TestAnUngatedHoldTakesEveryPacketAndNamesWhatItCan(t *testing.T) {
	d := &delayer{gate: -1, port: 9092, responses: true, held: map[string]time.Time{},
		pending: map[string]map[int32]header{}}
	d.holds(ipv4(request(0, 12, 40, "p", true)), time.Now())
	if _, m, held := d.holds(answer(response(40, true)), time.Now()); !held || m == nil || m.Corr != 40 {
		t.Errorf("the answer was not held and named: %+v %v", m, held)
	}
	if _, m, held := d.holds(answer([]byte("the middle of a large response")), time.Now()); !held || m != nil {
		t.Errorf("a packet inside a frame was not held unnamed: %+v %v", m, held)
	}
	for i := 0; i < maxExamples+5; i++ {
		d.record(&match{header: header{APIKey: i % 2}}, float64(i))
	}
	e := d.stats.Examples
	if d.stats.Matched["0"] != 13 || d.stats.Matched["1"] != 12 || len(e) != maxExamples || e[0].N != 6 ||
		e[maxExamples-1].N != maxExamples+5 || e[0].HeldMs != 5 {
		t.Errorf("the held frames were not counted, or the last %d not kept: %+v", maxExamples, d.stats)
	}
}

func TestAHealLetsEveryHeldPacketGoInOrderAndForgetsHeldConnections(t *testing.T) {
	d := &delayer{hold: true, held: map[string]time.Time{"ac190003:40000": time.Now().Add(heldUntilHeal)},
		wake: make(chan struct{}, 1)}
	start := time.Now()
	for id := uint32(1); id <= 3; id++ {
		if release := d.enqueue(id, start, nil); release.Sub(start) < heldUntilHeal {
			t.Fatalf("packet %d held only until %v", id, release.Sub(start))
		}
	}
	healed := start.Add(time.Second)
	d.healNow(healed)
	for i, p := range d.waiting {
		if p.id != uint32(i+1) || !p.release.Equal(healed) {
			t.Errorf("after the heal packet %d goes at %v, not at the heal", p.id, p.release.Sub(start))
		}
	}
	if len(d.held) != 0 {
		t.Errorf("a connection is still held after the heal: %v", d.held)
	}
}

// produce builds the start of a Produce request as a client sends it: header, transactional id, acks, timeout, one
// topic (by name, or by id from version 13) and its first partition.
func produce(version uint16, txn *string, topic string, partition uint32) []byte {
	flexible := version >= produceFlex
	b := binary.BigEndian.AppendUint16(nil, produceKey)
	b = binary.BigEndian.AppendUint16(b, version)
	b = binary.BigEndian.AppendUint32(b, 9)
	b = binary.BigEndian.AppendUint16(b, 4)
	b = append(b, "prod"...)
	str := func(s *string) {
		switch {
		case flexible && s == nil:
			b = append(b, 0)
		case flexible:
			b = append(binary.AppendUvarint(b, uint64(len(*s)+1)), *s...)
		case s == nil:
			b = append(b, 0xff, 0xff)
		default:
			b = append(binary.BigEndian.AppendUint16(b, uint16(len(*s))), *s...)
		}
	}
	if flexible {
		b = append(b, 0) // the header's tagged fields
	}
	str(txn)
	b = binary.BigEndian.AppendUint16(b, 0xffff) // acks=-1
	b = binary.BigEndian.AppendUint32(b, 30000)
	if flexible {
		b = append(b, 2)
	} else {
		b = binary.BigEndian.AppendUint32(b, 1)
	}
	if version >= produceIDs {
		b = append(b, []byte(topic)[:16]...)
	} else {
		str(&topic)
	}
	if flexible {
		b = append(b, 2)
	} else {
		b = binary.BigEndian.AppendUint32(b, 1)
	}
	b = binary.BigEndian.AppendUint32(b, partition)
	b = append(b, 0, 0, 0, 0)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

func TestAProduceRequestNamesItsFirstTopicAndPartitionInEveryVersion(t *testing.T) {
	txn := "kchaos-txn-0"
	for version := uint16(3); version <= 13; version++ {
		for _, id := range []*string{nil, &txn} {
			topic, want := "__remote_log_metadata", "__remote_log_metadata"
			if version >= produceIDs {
				topic, want = "0123456789abcdef", "30313233343536373839616263646566"
			}
			h, ok := requestHeader(produce(version, id, topic, 2))
			if !ok || h.Topic != want || h.Partition == nil || *h.Partition != 2 {
				t.Fatalf("Produce v%d (transactional id %v) read as %+v", version, id != nil, h)
			}
			whole := produce(version, id, topic, 2)
			for n := requestFixed; n < len(whole)-4; n++ {
				if h, ok := requestHeader(whole[:n]); ok && h.Partition != nil {
					t.Fatalf("Produce v%d cut at %d bytes named partition %d", version, n, *h.Partition)
				}
			}
		}
	}
}
