package wire

// Memory sharing over the control socket. The host gives the plugin one
// end of a SOCK_SEQPACKET socket pair (ExtraFiles, the descriptor named by
// $GODAT_PLUGIN_CTL_FD). On it the host sends the memfd of each
// api.AllocMemory region an LMR registers, with SCM_RIGHTS, and the plugin
// maps it at the same virtual address as in the host, so that triplets,
// registered addresses and remote addresses mean the same bytes on both
// sides and travel untranslated. The plugin answers every message; the
// host waits for the answer, so a CreateLMR that follows always finds its
// mapping.
//
// The socket has a second job: when the host process dies, the kernel
// closes its end and the plugin reads EOF; it then exits at once, so that
// no plugin outlives its host.

import (
	"encoding/binary"
	"fmt"
	"time"
)

// EnvCtlFD names the environment variable that tells a plugin which
// descriptor is its end of the control socket.
const EnvCtlFD = "GODAT_PLUGIN_CTL_FD"

// Control messages.
const (
	CtlMap   = 1 // host → plugin: id, size, address; the memfd rides along
	CtlUnmap = 2 // host → plugin: id
	CtlReply = 3 // plugin → host: id, status (0 ok), message
	CtlRings = 4 // host → plugin: size, address; the ring memfd and two eventfds ride along
)

const CtlMsgMax = 4096

// CtlTimeout bounds one exchange on the control socket.
const CtlTimeout = 10 * time.Second

// CtlMsg is the fixed header of every control message.
type CtlMsg struct {
	Op   uint32
	ID   uint64
	A, B uint64
	Text string
}

func (m CtlMsg) Encode() []byte {
	buf := make([]byte, 28, 28+len(m.Text))
	binary.LittleEndian.PutUint32(buf[0:], m.Op)
	binary.LittleEndian.PutUint64(buf[4:], m.ID)
	binary.LittleEndian.PutUint64(buf[12:], m.A)
	binary.LittleEndian.PutUint64(buf[20:], m.B)
	return append(buf, m.Text...)
}

func DecodeCtl(buf []byte) (CtlMsg, error) {
	if len(buf) < 28 {
		return CtlMsg{}, fmt.Errorf("control message of %d bytes is too short", len(buf))
	}
	return CtlMsg{
		Op: binary.LittleEndian.Uint32(buf[0:]), ID: binary.LittleEndian.Uint64(buf[4:]),
		A: binary.LittleEndian.Uint64(buf[12:]), B: binary.LittleEndian.Uint64(buf[20:]),
		Text: string(buf[28:]),
	}, nil
}
