// What netdelay reads of ZooKeeper's wire protocol, for the connections a node opens to ZooKeeper (a ZooKeeper-mode
// broker's, or a migrating KRaft controller's): a request's xid and opcode where a frame starts the segment. An
// answer starts with its size and the xid, as a Kafka response does with its correlation id.
package main

import "encoding/binary"

const (
	zkMinOp = -11 // closeSession, the lowest opcode (ZooDefs.OpCode)
	zkMaxOp = 107 // whoAmI, the highest
)

// zkRequestHeader reads the request header a segment starts with: its size, xid and opcode (int32 each), kept as
// a header's correlation id and API key.
func zkRequestHeader(data []byte) (header, bool) {
	if len(data) < 12 {
		return header{}, false
	}
	size := int32(binary.BigEndian.Uint32(data[:4]))
	op := int32(binary.BigEndian.Uint32(data[8:12]))
	if size < 8 || size > maxFrame || op < zkMinOp || op > zkMaxOp {
		return header{}, false
	}
	return header{APIKey: int(op), Corr: int32(binary.BigEndian.Uint32(data[4:8]))}, true
}

// request reads the header of a request a segment starts with, in the protocol the listener speaks.
func (d *delayer) request(data []byte) (header, bool) {
	if d.zookeeper {
		return zkRequestHeader(data)
	}
	return requestHeader(data)
}
