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
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/godat/godat/api"
	"github.com/godat/godat/plugin/internal/wire"
)

// pluginMem is the plugin's table of the host regions mapped into it.
type pluginMem struct {
	mu   sync.Mutex
	maps map[uint64]*api.Memory
	// rings receives the data-path region and doorbells.
	rings func(m *api.Memory, sq, cq *wire.Bell)
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
	buf := make([]byte, wire.CtlMsgMax)
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
		m, err := wire.DecodeCtl(buf[:n])
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
		switch m.Op {
		case wire.CtlMap:
			if len(fds) != 1 {
				rerr = fmt.Errorf("map %d: got %d descriptors, want 1", m.ID, len(fds))
			} else {
				rerr = pm.mapAt(m.ID, fds[0], m.A, m.B)
			}
		case wire.CtlUnmap:
			rerr = pm.unmap(m.ID)
		case wire.CtlRings:
			if len(fds) != 3 {
				rerr = fmt.Errorf("rings: got %d descriptors, want 3", len(fds))
				break
			}
			if rerr = pm.setRings(fds, m.A, m.B); rerr == nil {
				fds = fds[:1] // the doorbells are kept
			}
		default:
			rerr = fmt.Errorf("unknown control message %d", m.Op)
		}
		for _, fd := range fds {
			unix.Close(fd) // the mapping keeps the pages
		}
		reply := wire.CtlMsg{Op: wire.CtlReply, ID: m.ID}
		if rerr != nil {
			reply.A, reply.Text = 1, rerr.Error()
		}
		if _, _, err := c.WriteMsgUnix(reply.Encode(), nil, nil); err != nil {
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
	if uint64(m.Len()) != size || size != wire.ShmSize {
		m.Free()
		return fmt.Errorf("the ring region has %d bytes, want %d", m.Len(), wire.ShmSize)
	}
	for _, fd := range fds[1:] {
		if err := unix.SetNonblock(fd, true); err != nil {
			m.Free()
			return err
		}
	}
	sq, _ := wire.BellFromFD(fds[1])
	cq, _ := wire.BellFromFD(fds[2])
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
	s := os.Getenv(wire.EnvCtlFD)
	if s == "" {
		return nil, errors.New("$" + wire.EnvCtlFD + " is not set: this program is a godat provider plugin and must be started by godat's plugin host")
	}
	fd, err := strconv.Atoi(s)
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("$%s = %q is not a descriptor number", wire.EnvCtlFD, s)
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
