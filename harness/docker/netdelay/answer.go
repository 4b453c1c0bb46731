// Packets netdelay sends on changed: with -error the listener's answers to the gate's requests reach the asker
// with every ErrorCode set to one code, though the broker did the work; with -reset a held packet goes as a TCP
// reset in its place. Either way its lengths and checksums are computed anew.
package main

import (
	"encoding/binary"
	"fmt"

	"github.com/mdlayher/netlink"
)

const (
	attrVerdictPayload = 10 // NFQA_PAYLOAD: a verdict's replacement packet
	tcpRST             = 0x04
	tcpACK             = 0x10
)

// answers rewrites a response packet that starts a frame answering the gate's request (of the selected client):
// it returns the frame, or nil when the packet passes as it came.
func (d *delayer) answers(packet []byte) *match {
	s, ok := tcpSegment(packet, d.port)
	if !ok {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.noted(s) {
		return nil
	}
	m := d.frame(s)
	if m == nil || !d.selects(m) {
		return nil
	}
	sc := d.schemas[m.APIKey]
	if sc == nil {
		d.failedLocked(fmt.Errorf("no response schema for API key %d", m.APIKey))
		return nil
	}
	for _, at := range errorCodes(sc, m.Version, s.data) {
		binary.BigEndian.PutUint16(s.data[at:], uint16(d.errorCode))
		m.Codes++
	}
	if m.Codes > 0 && !tcpChecksum(packet) {
		d.failedLocked(fmt.Errorf("cannot checksum a %d-byte packet", len(packet)))
		return nil
	}
	return m
}

// answer lets a rewritten packet through in place of the one that came.
func (d *delayer) answer(id uint32, packet []byte, m *match) {
	err := d.replace(id, packet)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.failedLocked(err) {
		return
	}
	d.stats.Answered++
	d.record(m, 0)
}

// replace accepts a packet with other bytes in its place (shorter ones cut it).
func (d *delayer) replace(id uint32, packet []byte) error {
	return d.verdict(id, nfAccept, netlink.Attribute{Type: attrVerdictPayload, Data: packet})
}

// refuse hands a packet back to its hook marked, for the chain's REJECT rule to answer with a reset.
func (d *delayer) refuse(id uint32) error {
	return d.verdict(id, nfRepeat, netlink.Attribute{Type: attrMark, Data: binary.BigEndian.AppendUint32(nil, d.mark)})
}

// resetOf turns an IPv4 or IPv6 TCP packet into a reset at its sequence number: its headers alone, flags RST and
// ACK, lengths and checksums set anew. False if it is not one.
func resetOf(p []byte) ([]byte, bool) {
	ip := 40
	if len(p) >= 20 && p[0]>>4 == 4 && p[0]&0x0f >= 5 {
		ip = int(p[0]&0x0f) * 4
	} else if len(p) < 60 || p[0]>>4 != 6 {
		return nil, false
	}
	if len(p) < ip+20 || len(p) < ip+int(p[ip+12]>>4)*4 {
		return nil, false
	}
	out := append([]byte{}, p[:ip+int(p[ip+12]>>4)*4]...)
	out[ip+13] = tcpRST | tcpACK
	if ip == 40 {
		binary.BigEndian.PutUint16(out[4:6], uint16(len(out)-40))
	} else {
		binary.BigEndian.PutUint16(out[2:4], uint16(len(out)))
		out[10], out[11] = 0, 0
		binary.BigEndian.PutUint16(out[10:12], ^uint16(onesSum(0, out[:ip])))
	}
	return out, tcpChecksum(out)
}

// tcpChecksum sets an IPv4 or IPv6 packet's TCP checksum for its current bytes; false if it is not one.
func tcpChecksum(p []byte) bool {
	var pseudo []byte
	var tcp []byte
	switch {
	case len(p) >= 20 && p[0]>>4 == 4:
		ihl, total := int(p[0]&0x0f)*4, int(binary.BigEndian.Uint16(p[2:4]))
		if total > len(p) || ihl+20 > total {
			return false
		}
		tcp = p[ihl:total]
		pseudo = append(append([]byte{}, p[12:20]...), 0, 6)
		pseudo = binary.BigEndian.AppendUint16(pseudo, uint16(len(tcp)))
	case len(p) >= 60 && p[0]>>4 == 6:
		total := 40 + int(binary.BigEndian.Uint16(p[4:6]))
		if total > len(p) {
			return false
		}
		tcp = p[40:total]
		pseudo = append(append([]byte{}, p[8:40]...), 0, 0, 0, 0, 0, 0, 0, 6)
		binary.BigEndian.PutUint32(pseudo[32:36], uint32(len(tcp)))
	default:
		return false
	}
	tcp[16], tcp[17] = 0, 0
	sum := onesSum(onesSum(0, pseudo), tcp)
	binary.BigEndian.PutUint16(tcp[16:18], ^uint16(sum))
	return true
}

// onesSum adds data's 16-bit big-endian words (an odd last byte padded with zero) to sum, folding the carries.
func onesSum(sum uint32, data []byte) uint32 {
	for i := 0; i+1 < len(data); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(data[i:]))
	}
	if len(data)%2 == 1 {
		sum += uint32(data[len(data)-1]) << 8
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return sum
}
