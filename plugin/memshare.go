package plugin

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
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/godat/godat/api"
)

// EnvCtlFD names the environment variable that tells a plugin which
// descriptor is its end of the control socket.
const EnvCtlFD = "GODAT_PLUGIN_CTL_FD"

// Control messages.
const (
	ctlMap   = 1 // host → plugin: id, size, address; the memfd rides along
	ctlUnmap = 2 // host → plugin: id
	ctlReply = 3 // plugin → host: id, status (0 ok), message
	ctlRings = 4 // host → plugin: size, address; the ring memfd and two eventfds ride along
)

const ctlMsgMax = 4096

// ctlTimeout bounds one exchange on the control socket.
const ctlTimeout = 10 * time.Second

// ctlMsg is the fixed header of every control message.
type ctlMsg struct {
	op   uint32
	id   uint64
	a, b uint64
	text string
}

func (m ctlMsg) encode() []byte {
	buf := make([]byte, 28, 28+len(m.text))
	binary.LittleEndian.PutUint32(buf[0:], m.op)
	binary.LittleEndian.PutUint64(buf[4:], m.id)
	binary.LittleEndian.PutUint64(buf[12:], m.a)
	binary.LittleEndian.PutUint64(buf[20:], m.b)
	return append(buf, m.text...)
}

func decodeCtl(buf []byte) (ctlMsg, error) {
	if len(buf) < 28 {
		return ctlMsg{}, fmt.Errorf("control message of %d bytes is too short", len(buf))
	}
	return ctlMsg{
		op: binary.LittleEndian.Uint32(buf[0:]), id: binary.LittleEndian.Uint64(buf[4:]),
		a: binary.LittleEndian.Uint64(buf[12:]), b: binary.LittleEndian.Uint64(buf[20:]),
		text: string(buf[28:]),
	}, nil
}

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
func (h *hostCtl) call(m ctlMsg, fds ...int) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	// A plugin that does not answer in time is as good as dead.
	h.c.SetDeadline(time.Now().Add(ctlTimeout))
	defer h.c.SetDeadline(time.Time{})
	if _, _, err := h.c.WriteMsgUnix(m.encode(), oob, nil); err != nil {
		return fmt.Errorf("control socket: %w", err)
	}
	buf := make([]byte, ctlMsgMax)
	n, _, _, _, err := h.c.ReadMsgUnix(buf, nil)
	if err != nil {
		return fmt.Errorf("control socket: %w", err)
	}
	if n == 0 {
		return errors.New("control socket: the plugin closed it")
	}
	r, err := decodeCtl(buf[:n])
	if err != nil {
		return err
	}
	if r.op != ctlReply || r.id != m.id {
		return fmt.Errorf("control socket: unexpected reply %d for %d", r.op, r.id)
	}
	if r.a != 0 {
		return errors.New(r.text)
	}
	return nil
}

func (h *hostCtl) close() error { return h.c.Close() }

// pluginMem is the plugin's table of the host regions mapped into it.
type pluginMem struct {
	mu   sync.Mutex
	maps map[uint64]*api.Memory
	// rings receives the data-path region and doorbells.
	rings func(m *api.Memory, sq, cq *bell)
}

func (pm *pluginMem) get(id uint64) ([]byte, bool) {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	m := pm.maps[id]
	if m == nil {
		return nil, false
	}
	return m.Bytes(), true
}

// serveCtl reads control messages until the host goes away, then calls
// gone (which exits the process).
func (pm *pluginMem) serveCtl(c *net.UnixConn, gone func(error)) {
	buf := make([]byte, ctlMsgMax)
	oob := make([]byte, unix.CmsgSpace(4*4))
	for {
		n, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
		if err != nil || n == 0 {
			if err == nil {
				err = errors.New("end of file")
			}
			gone(err)
			return
		}
		m, err := decodeCtl(buf[:n])
		if err != nil {
			gone(err)
			return
		}
		var fds []int
		if oobn > 0 {
			if cms, perr := unix.ParseSocketControlMessage(oob[:oobn]); perr == nil {
				for _, cm := range cms {
					if got, rerr := unix.ParseUnixRights(&cm); rerr == nil {
						fds = append(fds, got...)
					}
				}
			}
		}
		var rerr error
		switch m.op {
		case ctlMap:
			if len(fds) != 1 {
				rerr = fmt.Errorf("map %d: got %d descriptors, want 1", m.id, len(fds))
			} else {
				rerr = pm.mapAt(m.id, fds[0], m.a, m.b)
			}
		case ctlUnmap:
			rerr = pm.unmap(m.id)
		case ctlRings:
			if len(fds) != 3 {
				rerr = fmt.Errorf("rings: got %d descriptors, want 3", len(fds))
				break
			}
			if rerr = pm.setRings(fds, m.a, m.b); rerr == nil {
				fds = fds[:1] // the doorbells are kept
			}
		default:
			rerr = fmt.Errorf("unknown control message %d", m.op)
		}
		for _, fd := range fds {
			unix.Close(fd) // the mapping keeps the pages
		}
		reply := ctlMsg{op: ctlReply, id: m.id}
		if rerr != nil {
			reply.a, reply.text = 1, rerr.Error()
		}
		if _, _, err := c.WriteMsgUnix(reply.encode(), nil, nil); err != nil {
			gone(err)
			return
		}
	}
}

// mapAt maps the memfd fd, of size bytes, at exactly addr: the host's
// address of the same pages.
func (pm *pluginMem) mapAt(id uint64, fd int, size, addr uint64) error {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	if pm.maps[id] != nil {
		return fmt.Errorf("memory %d is already mapped", id)
	}
	m, err := api.MapMemory(fd, api.VAddr(addr))
	if err != nil {
		return fmt.Errorf("mapping the host's memory at %#x: %w", addr, err)
	}
	if uint64(m.Len()) != size {
		m.Free()
		return fmt.Errorf("the shared memory has %d bytes, the host says %d", m.Len(), size)
	}
	if pm.maps == nil {
		pm.maps = map[uint64]*api.Memory{}
	}
	pm.maps[id] = m
	return nil
}

// setRings maps the data-path region at the host's address and adopts
// the two doorbells.
func (pm *pluginMem) setRings(fds []int, size, addr uint64) error {
	m, err := api.MapMemory(fds[0], api.VAddr(addr))
	if err != nil {
		return fmt.Errorf("mapping the rings: %w", err)
	}
	if uint64(m.Len()) != size || size != shmSize {
		m.Free()
		return fmt.Errorf("the ring region has %d bytes, want %d", m.Len(), shmSize)
	}
	for _, fd := range fds[1:] {
		if err := unix.SetNonblock(fd, true); err != nil {
			m.Free()
			return err
		}
	}
	sq, _ := bellFromFD(fds[1])
	cq, _ := bellFromFD(fds[2])
	pm.rings(m, sq, cq)
	return nil
}

func (pm *pluginMem) unmap(id uint64) error {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	m := pm.maps[id]
	if m == nil {
		return fmt.Errorf("memory %d is not mapped", id)
	}
	delete(pm.maps, id)
	return m.Free()
}

// pluginCtlConn opens the plugin's end of the control socket from the
// descriptor the host named.
func pluginCtlConn() (*net.UnixConn, error) {
	s := os.Getenv(EnvCtlFD)
	if s == "" {
		return nil, errors.New("$" + EnvCtlFD + " is not set: this program is a godat provider plugin and must be started by godat's plugin host")
	}
	fd, err := strconv.Atoi(s)
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("$%s = %q is not a descriptor number", EnvCtlFD, s)
	}
	syscall.CloseOnExec(fd)
	f := os.NewFile(uintptr(fd), "godat-plugin-ctl")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("control socket (descriptor %d): %w", fd, err)
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, fmt.Errorf("descriptor %d is not a unix socket", fd)
	}
	return uc, nil
}
