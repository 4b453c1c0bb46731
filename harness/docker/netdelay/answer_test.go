package main

import (
	"encoding/binary"
	"math/rand"
	"os"
	"testing"
)

// a schema in Kafka's format, comments included: a top-level error, a common struct in an array, a tagged field
const testSchema = `// a comment line
{
  "apiKey": 0, "type": "response", "name": "TestResponse",
  // versions 2+ are flexible
  "validVersions": "0-3", "flexibleVersions": "2+",
  "fields": [
    { "name": "ThrottleTimeMs", "type": "int32", "versions": "1+" },
    { "name": "ErrorCode", "type": "int16", "versions": "0+" },
    { "name": "Topics", "type": "[]Topic", "versions": "0+" },
    { "name": "Leader", "type": "Leader", "versions": "3+", "taggedVersions": "3+", "tag": 0,
      "fields": [{ "name": "ErrorCode", "type": "int16", "versions": "3+" }] }
  ],
  "commonStructs": [
    { "name": "Topic", "versions": "0+", "fields": [
      { "name": "Name", "type": "string", "versions": "0+" },
      { "name": "Partitions", "type": "[]Partition", "versions": "0+", "fields": [
        { "name": "Index", "type": "int32", "versions": "0+" },
        { "name": "ErrorCode", "type": "int16", "versions": "0+" },
        { "name": "Message", "type": "string", "versions": "1+", "nullableVersions": "1+" }
      ]}
    ]}
  ]
}`

// testResponse builds a frame of testSchema's response at `version` with one topic of two partitions, and the
// offsets its ErrorCode fields sit at.
func testResponse(version int) ([]byte, []int) {
	flexible := version >= 2
	count := func(b []byte, n int) []byte {
		if flexible {
			return binary.AppendUvarint(b, uint64(n+1))
		}
		return binary.BigEndian.AppendUint32(b, uint32(n))
	}
	b := binary.BigEndian.AppendUint32(nil, 31) // the correlation id
	if flexible {
		b = append(b, 0)
	}
	if version >= 1 {
		b = binary.BigEndian.AppendUint32(b, 0)
	}
	want := []int{len(b) + 4}
	b = count(append(b, 0, 0), 1) // the top-level error, then one topic named t
	if flexible {
		b = append(b, 2, 't')
	} else {
		b = append(b, 0, 1, 't')
	}
	b = count(b, 2)
	for i := 0; i < 2; i++ {
		b = binary.BigEndian.AppendUint32(b, uint32(i))
		want = append(want, len(b)+4)
		b = append(b, 0, 0)
		if version >= 1 && flexible {
			b = append(b, 0, 0) // a null compact string, then the partition's tagged fields
		} else if version >= 1 {
			b = append(b, 0xff, 0xff)
		}
	}
	if flexible {
		b = append(b, 0, 1, 0, 2, 0, 0) // the topic's tags, then the response's: Leader, tag 0, two bytes
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...), want
}

func TestTheErrorCodesOfEveryVersionAreFoundByTheSchema(t *testing.T) {
	s, err := parseSchema([]byte(testSchema))
	if err != nil {
		t.Fatal(err)
	}
	for version := 0; version <= 3; version++ {
		frame, want := testResponse(version)
		got := errorCodes(s, version, frame)
		if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
			t.Errorf("v%d: error codes at %v, not %v", version, got, want)
		}
		for n := 0; n < len(frame); n++ { // a segment that ends early: the codes within it, no more
			for _, at := range errorCodes(s, version, frame[:n]) {
				if at+2 > n {
					t.Fatalf("v%d cut at %d: an error code at %d", version, n, at)
				}
			}
		}
	}
}

func TestInVersionsReadsKafkasRanges(t *testing.T) {
	for _, c := range []struct {
		r    string
		v    int
		want bool
	}{{"3+", 3, true}, {"3+", 2, false}, {"1-5", 5, true}, {"1-5", 6, false}, {"7", 7, true}, {"7", 8, false},
		{"none", 0, false}, {"", 0, false}, {"x+", 1, false}} {
		if inVersions(c.r, c.v) != c.want {
			t.Errorf("%q at %d: %v", c.r, c.v, !c.want)
		}
	}
}

// framed wraps a response frame in IPv4 and TCP headers from port 9092 with its total length set.
func framed(frame []byte) []byte {
	p := answer(frame)
	binary.BigEndian.PutUint16(p[2:4], uint16(len(p)))
	return p
}

func TestAnAnswerHasItsErrorCodesSetAndAChecksumThatVerifies(t *testing.T) {
	s, _ := parseSchema([]byte(testSchema))
	d := &delayer{gate: 0, port: 9092, responses: true, client: "kchaos-", errorCode: 6,
		schemas: map[int]*schema{0: s}, pending: map[string]map[int32]header{}}
	d.answers(ipv4(request(0, 2, 31, "kchaos-producer", true)))
	d.answers(ipv4(request(0, 2, 32, "other", true)))
	frame, want := testResponse(2)
	p := framed(frame)
	m := d.answers(p)
	if m == nil || m.Codes != 3 || m.Client != "kchaos-producer" {
		t.Fatalf("the answer was not rewritten: %+v", m)
	}
	for _, at := range want {
		if code := int16(binary.BigEndian.Uint16(p[40+at:])); code != 6 {
			t.Errorf("the error code at %d is %d", at, code)
		}
	}
	pseudo := append(append([]byte{}, p[12:20]...), 0, 6, 0, byte(len(p)-20))
	if sum := onesSum(onesSum(0, pseudo), p[20:]); sum != 0xffff {
		t.Errorf("the checksum does not verify: %#x", sum)
	}
	other, _ := testResponse(2)
	binary.BigEndian.PutUint32(other[4:], 32)
	if m := d.answers(framed(other)); m != nil {
		t.Errorf("the answer to a client the selection leaves out was rewritten: %+v", m)
	}
}

func TestAHeldPacketBecomesAResetWithItsSequenceAndChecksumsThatVerify(t *testing.T) {
	p := framed(append(response(9, false), make([]byte, 100)...))
	binary.BigEndian.PutUint32(p[24:28], 123456) // the sequence number
	p[33] = tcpACK | 0x08                        // PSH and ACK, as data goes
	rst, ok := resetOf(p)
	if !ok || len(rst) != 40 || rst[33] != tcpRST|tcpACK || binary.BigEndian.Uint16(rst[2:4]) != 40 ||
		binary.BigEndian.Uint32(rst[24:28]) != 123456 {
		t.Fatalf("the reset reads %v, %v", rst, ok)
	}
	if sum := onesSum(0, rst[:20]); sum != 0xffff {
		t.Errorf("the IPv4 header checksum does not verify: %#x", sum)
	}
	pseudo := append(append([]byte{}, rst[12:20]...), 0, 6, 0, 20)
	if sum := onesSum(onesSum(0, pseudo), rst[20:]); sum != 0xffff {
		t.Errorf("the TCP checksum does not verify: %#x", sum)
	}
	for n := 0; n < 40; n++ {
		if _, ok := resetOf(p[:n]); ok {
			t.Fatalf("a packet cut at %d bytes became a reset", n)
		}
	}
}

// TestEveryResponseVersionOfTheJarIsWalked reads each response schema of the kafka-clients jar named by
// KCHAOS_CLIENTS_JAR (tests/unit/test_netdelay.py sets it) and walks every valid version over zeros, random bytes
// and every cut of a Produce response.
func TestEveryResponseVersionOfTheJarIsWalked(t *testing.T) {
	jar := os.Getenv("KCHAOS_CLIENTS_JAR")
	if jar == "" {
		t.Skip("KCHAOS_CLIENTS_JAR names no kafka-clients jar")
	}
	schemas, err := loadSchemas(jar)
	if err != nil || len(schemas) < 60 {
		t.Fatalf("%d response schemas read: %v", len(schemas), err)
	}
	rng := rand.New(rand.NewSource(1))
	noise := make([]byte, 4096)
	for key, s := range schemas {
		for version := 0; version <= maxVersion; version++ {
			errorCodes(s, version, make([]byte, 4096))
			rng.Read(noise)
			for _, at := range errorCodes(s, version, noise) {
				if at < 8 || at+2 > len(noise) {
					t.Fatalf("key %d v%d: an error code at %d", key, version, at)
				}
			}
		}
	}
	endTxn := schemas[endTxnKey]
	for version := 0; version <= 5; version++ {
		want := 8 + 4
		if version >= 3 {
			want++
		}
		if got := errorCodes(endTxn, version, make([]byte, 32)); len(got) != 1 || got[0] != want {
			t.Errorf("EndTxn v%d: error codes at %v, not [%d]", version, got, want)
		}
	}
	for version := 3; inVersions(schemas[produceKey].ValidVersions, version); version++ {
		frame, want := produceResponse(version)
		if got := errorCodes(schemas[produceKey], version, frame); len(got) != 2 || got[0] != want[0] ||
			got[1] != want[1] {
			t.Errorf("Produce v%d: error codes at %v, not %v", version, got, want)
		}
	}
}

// produceResponse builds a Produce response at `version` with one topic of two partitions, and where its two
// ErrorCode fields sit.
func produceResponse(version int) ([]byte, []int) {
	flexible := version >= produceFlex
	b := binary.BigEndian.AppendUint32(nil, 5)
	if flexible {
		b = append(b, 0, 2) // the header's tags, then one topic
	} else {
		b = binary.BigEndian.AppendUint32(b, 1)
	}
	switch {
	case version >= produceIDs:
		b = append(append(b, make([]byte, 16)...), 3)
	case flexible:
		b = append(b, 2, 't', 3)
	default:
		b = append(b, 0, 1, 't', 0, 0, 0, 2)
	}
	var want []int
	for i := 0; i < 2; i++ {
		b = binary.BigEndian.AppendUint32(b, uint32(i))
		want = append(want, len(b)+4)
		b = append(b, 0, 0)
		b = append(b, make([]byte, 8+8)...) // the base offset and log append time
		if version >= 5 {
			b = append(b, make([]byte, 8)...)
		}
		switch {
		case flexible:
			b = append(b, 1, 0, 0) // no record errors, a null message, no tags
		case version >= 8:
			b = append(b, 0, 0, 0, 0, 0xff, 0xff)
		}
	}
	if flexible {
		b = append(b, 0)
	}
	b = binary.BigEndian.AppendUint32(b, 0) // the throttle time
	if flexible {
		b = append(b, 0)
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...), want
}
