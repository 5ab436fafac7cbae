package host

// The host's end of the control socket (see plugin/internal/wire/ctl.go).

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/godat/godat/plugin/internal/wire"
)

// ctlPair makes the socket pair: the host's end as a connection, the
// plugin's as a file for exec.Cmd.ExtraFiles (the caller closes it once the
// child has started).
func ctlPair() (*net.UnixConn, *os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	hostF := os.NewFile(uintptr(fds[0]), "godat-plugin-ctl-host")
	child := os.NewFile(uintptr(fds[1]), "godat-plugin-ctl")
	c, err := net.FileConn(hostF)
	hostF.Close()
	if err != nil {
		child.Close()
		return nil, nil, fmt.Errorf("control socket: %w", err)
	}
	return c.(*net.UnixConn), child, nil
}

// hostCtl is the host's end of the control socket. Calls are serialized:
// one message, one reply.
type hostCtl struct {
	mu sync.Mutex
	c  *net.UnixConn
}

// call sends m (with the descriptors fds) and waits for the reply.
func (h *hostCtl) call(m wire.CtlMsg, fds ...int) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	// A plugin that does not answer in time is as good as dead.
	h.c.SetDeadline(time.Now().Add(wire.CtlTimeout))
	defer h.c.SetDeadline(time.Time{})
	if _, _, err := h.c.WriteMsgUnix(m.Encode(), oob, nil); err != nil {
		return fmt.Errorf("control socket: %w", err)
	}
	buf := make([]byte, wire.CtlMsgMax)
	n, _, _, _, err := h.c.ReadMsgUnix(buf, nil)
	if err != nil {
		return fmt.Errorf("control socket: %w", err)
	}
	if n == 0 {
		return errors.New("control socket: the plugin closed it")
	}
	r, err := wire.DecodeCtl(buf[:n])
	if err != nil {
		return err
	}
	if r.Op != wire.CtlReply || r.ID != m.ID {
		return fmt.Errorf("control socket: unexpected reply %d for %d", r.Op, r.ID)
	}
	if r.A != 0 {
		return errors.New(r.Text)
	}
	return nil
}

func (h *hostCtl) close() error { return h.c.Close() }
