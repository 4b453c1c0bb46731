package main

import (
	"encoding/binary"
	"testing"
	"time"
)

// endTxn builds the start of an EndTxn request as a client sends it: size, header, then the body.
func endTxn(version uint16, commit bool, tags []byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, endTxnKey)
	b = binary.BigEndian.AppendUint16(b, version)
	b = binary.BigEndian.AppendUint32(b, 7) // correlation id
	b = binary.BigEndian.AppendUint16(b, 6) // client id
	b = append(b, "kchaos"...)
	id := "kchaos-txn-0"
	if version >= 3 {
		b = append(b, tags...)
		b = binary.AppendUvarint(b, uint64(len(id)+1))
	} else {
		b = binary.BigEndian.AppendUint16(b, uint16(len(id)))
	}
	b = append(b, id...)
	b = binary.BigEndian.AppendUint64(b, 4001) // producer id
	b = binary.BigEndian.AppendUint16(b, 3)    // epoch
	flag := byte(0)
	if commit {
		flag = 1
	}
	b = append(b, flag, 0)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

func TestOnlyCommittingEndTxnStartsTheHold(t *testing.T) {
	noTags, twoTags := []byte{0}, []byte{2, 0, 1, 9, 5, 3, 'a', 'b', 'c'}
	for _, c := range []struct {
		version uint16
		tags    []byte
	}{{0, nil}, {2, nil}, {3, noTags}, {4, twoTags}, {5, noTags}} {
		if !endTxnCommits(endTxn(c.version, true, c.tags)) {
			t.Errorf("EndTxn v%d that commits not seen as a commit", c.version)
		}
		if endTxnCommits(endTxn(c.version, false, c.tags)) {
			t.Errorf("EndTxn v%d that aborts seen as a commit", c.version)
		}
	}
}

func TestACutOrMangledRequestStartsNoHold(t *testing.T) {
	whole := endTxn(4, true, []byte{1, 0, 2, 'x', 'y'})
	for n := 0; n < len(whole)-1; n++ {
		if endTxnCommits(whole[:n]) {
			t.Fatalf("the request cut at %d bytes seen as a commit", n)
		}
	}
	if endTxnCommits(endTxn(4, true, []byte{1, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})) {
		t.Fatal("a tag longer than the packet seen as a commit")
	}
}

// ipv4 wraps a request in IPv4 and TCP headers (no options) from 172.25.0.3, port 40000, to port 9092.
func ipv4(request []byte) []byte {
	p := make([]byte, 40, 40+len(request))
	p[0], p[9] = 0x45, 6
	copy(p[12:16], []byte{172, 25, 0, 3})
	copy(p[16:20], []byte{172, 25, 0, 4})
	binary.BigEndian.PutUint16(p[20:22], 40000)
	binary.BigEndian.PutUint16(p[22:24], 9092)
	p[32] = 5 << 4
	return append(p, request...)
}

func TestTheCommitGateLetsAbortsPassAndHoldsACommit(t *testing.T) {
	whole := endTxn(4, true, []byte{1, 0, 2, 'x', 'y'})
	if whole[len(whole)-2] != 1 || !endTxnCommits(whole) {
		t.Fatal("the whole request not seen as a commit")
	}
	d := &delayer{gate: endTxnKey, commits: true, port: 9092, held: map[string]time.Time{}}
	if _, _, held := d.holds(ipv4(endTxn(3, false, []byte{0})), time.Now()); held {
		t.Error("an abort started a hold")
	}
	if conn, _, held := d.holds(ipv4(endTxn(3, true, []byte{0})), time.Now()); !held || conn != "ac190003:40000" {
		t.Errorf("a commit did not start a hold of its connection: %q, %v", conn, held)
	}
	d.commits = false
	if _, _, held := d.holds(ipv4(endTxn(3, false, []byte{0})), time.Now()); !held {
		t.Error("without -commits an abort did not start a hold")
	}
}
