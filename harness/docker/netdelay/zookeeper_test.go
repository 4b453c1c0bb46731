package main

import (
	"encoding/binary"
	"testing"
	"time"
)

// zkFrame builds a ZooKeeper request (size, xid, opcode, a short body) or answer (size, xid, zxid, error).
func zkFrame(xid int32, op int32, answer bool) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(xid))
	if answer {
		b = append(binary.BigEndian.AppendUint64(b, 77), 0, 0, 0, 0)
	} else {
		b = append(binary.BigEndian.AppendUint32(b, uint32(op)), 0, 0, 0, 9)
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

// zkPacket wraps a frame between a controller (172.25.0.3, port 40000) and ZooKeeper (172.25.0.9, port 2181).
func zkPacket(frame []byte, toZooKeeper bool) []byte {
	p := ipv4(frame)
	local, remote := []byte{172, 25, 0, 3}, []byte{172, 25, 0, 9}
	ports := []uint16{40000, 2181}
	if !toZooKeeper {
		local, remote, ports = remote, local, []uint16{2181, 40000}
	}
	copy(p[12:16], local)
	copy(p[16:20], remote)
	binary.BigEndian.PutUint16(p[20:22], ports[0])
	binary.BigEndian.PutUint16(p[22:24], ports[1])
	return p
}

func TestAZooKeeperAnswerToAMultiStartsTheHoldOfItsConnection(t *testing.T) {
	d := &delayer{gate: 14, port: 2181, responses: true, zookeeper: true, held: map[string]time.Time{},
		pending: map[string]map[int32]header{}}
	now := time.Now()
	for xid, op := range map[int32]int32{5: 4, 6: 14} { // a getData, then a multi
		if _, _, held := d.holds(zkPacket(zkFrame(xid, op, false), true), now); held {
			t.Fatalf("request xid %d was held on a response hold", xid)
		}
	}
	if _, _, held := d.holds(zkPacket(zkFrame(5, 0, true), false), now); held {
		t.Error("the getData answer was held")
	}
	conn, m, held := d.holds(zkPacket(zkFrame(6, 0, true), false), now)
	if !held || conn != "ac190003:40000" || m == nil || m.APIKey != 14 || m.Corr != 6 || !m.Response {
		t.Fatalf("the multi's answer did not start a hold: %q %+v %v", conn, m, held)
	}
}

func TestZooKeeperRequestHeadersAreReadAndBadOnesRefused(t *testing.T) {
	for op := int32(zkMinOp); op <= zkMaxOp; op++ {
		if h, ok := zkRequestHeader(zkFrame(-2, op, false)); !ok || h.APIKey != int(op) || h.Corr != -2 {
			t.Fatalf("opcode %d read as %+v, %v", op, h, ok)
		}
	}
	whole := zkFrame(1, 14, false)
	for n := 0; n < 12; n++ {
		if _, ok := zkRequestHeader(whole[:n]); ok {
			t.Fatalf("a request cut at %d bytes was read", n)
		}
	}
	for name, bad := range map[string][]byte{
		"opcode past the table": zkFrame(1, zkMaxOp+1, false),
		"opcode below it":       zkFrame(1, zkMinOp-1, false),
		"size below a header":   append([]byte{0, 0, 0, 7}, whole[4:]...),
	} {
		if _, ok := zkRequestHeader(bad); ok {
			t.Errorf("%s was read as a request", name)
		}
	}
}
