//go:build verbs && cgo

package verbs

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"encoding/binary"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"github.com/godat/godat/api"
)

// devAttr is what the IA reports of its device (ibv_query_device).
type devAttr struct {
	FirmwareVersion  string
	NodeGUID         uint64
	VendorID         uint32
	VendorPartID     uint32
	HardwareVersion  uint32
	MaxMRSize        uint64
	MaxQP            int
	MaxQPWR          int
	MaxSGE           int
	MaxSGERead       int
	MaxCQ            int
	MaxCQE           int
	MaxMR            int
	MaxPD            int
	MaxQPRdAtom      int // RDMA reads a QP may have outstanding as target
	MaxQPInitRdAtom  int // RDMA reads a QP may have outstanding as initiator
	MaxResRdAtom     int // of the whole device, as target
	MaxMW            int
	MaxSRQ           int
	MaxSRQWR         int
	MaxSRQSGE        int
	PhysPorts        int
	MemWindowType2   bool // type 2 (2A or 2B) memory windows
	RCEnabled        bool
	SRQResizeAllowed bool
}

// portAttr is what the IA reports of its port (ibv_query_port) and the
// GID entry of its address.
type portAttr struct {
	Num        uint8
	State      string
	LinkLayer  string // "InfiniBand" or "Ethernet"
	ActiveMTU  int    // bytes
	MaxMTU     int    // bytes
	MaxMsgSize uint32
	GID        string // the GID of the IA's address, in ibv_devinfo's form
	GIDIndex   int
	GIDType    string // "IB", "RoCE v1" or "RoCE v2"
}

// device is the RDMA device, port and address an IA uses.
type device struct {
	ctx    *C.struct_ibv_context // owned by librdmacm (rdma_get_devices)
	name   string
	netdev string // the netdev of the address, if known
	ip     net.IP
	attr   devAttr
	port   portAttr
}

// deviceList is rdma_get_devices' list: librdmacm's open context of every
// device, kept while an IA uses one of them.
type deviceList struct {
	list **C.struct_ibv_context
	ctxs []*C.struct_ibv_context
}

func getDevices() (*deviceList, error) {
	var n C.int
	l, err := C.rdma_get_devices(&n)
	if l == nil {
		return nil, notFound("rdma-core cannot list RDMA devices: rdma_get_devices: " + errnoText(err))
	}
	d := &deviceList{list: l, ctxs: unsafe.Slice(l, int(n))}
	if n == 0 {
		d.free()
		return nil, notFound(unavailable())
	}
	return d, nil
}

func (d *deviceList) free() {
	if d.list != nil {
		C.rdma_free_devices(d.list)
		d.list, d.ctxs = nil, nil
	}
}

func ctxName(c *C.struct_ibv_context) string { return C.GoString(C.ibv_get_device_name(c.device)) }

func (d *deviceList) names() []string {
	var out []string
	for _, c := range d.ctxs {
		out = append(out, ctxName(c))
	}
	return out
}

func (d *deviceList) byName(name string) *C.struct_ibv_context {
	for _, c := range d.ctxs {
		if ctxName(c) == name {
			return c
		}
	}
	return nil
}

func notFound(msg string) error {
	return api.Errorf(api.ProviderNotFound, api.SubNameNotRegistered, msg)
}

// resolve finds the device, port and address that ia_params names: "" (the
// first address that rdma_cm can bind), a device and port ("rxe0 1",
// "mlx5_0" for port 1), a netdev ("ib0", also the classic "ib0 0" whose
// second word is ignored), or an IP address ("192.0.2.1", "[fe80::1%ib0]"
// is not supported: use a global address).
func resolve(devs *deviceList, params string) (*device, error) {
	f := strings.Fields(params)
	var (
		ctx      *C.struct_ibv_context
		portNum  uint8
		ip       net.IP
		netdev   string
		tried    []string
		probeErr string
	)
	probe := func(cand net.IP) bool {
		c, p, err := bindProbe(cand)
		if err != nil {
			tried = append(tried, cand.String())
			probeErr = err.Error()
			return false
		}
		if ctx != nil && (c != ctx || (portNum != 0 && p != portNum)) {
			tried = append(tried, cand.String()+" (on "+ctxName(c)+" port "+strconv.Itoa(int(p))+")")
			return false
		}
		ctx, portNum, ip = c, p, cand
		return true
	}
	// probeAll tries the addresses of netdev (of all netdevs for "") in
	// turn and keeps the first that binds where it should.
	probeAll := func(dev string) bool {
		for _, a := range localAddrs(dev) {
			if probe(a.ip) {
				netdev = a.netdev
				return true
			}
		}
		return false
	}
	switch {
	case len(f) == 0:
		if !probeAll("") {
			return nil, notFound(fmt.Sprintf("ia_params is empty and no local address binds to an RDMA device through rdma_cm (devices: %s; tried %s)",
				strings.Join(devs.names(), ", "), listOrNone(tried)))
		}
	case devs.byName(f[0]) != nil:
		ctx, portNum = devs.byName(f[0]), 1
		if len(f) > 1 {
			n, err := strconv.ParseUint(f[1], 10, 8)
			if err != nil || n == 0 {
				return nil, notFound(fmt.Sprintf("ia_params %q: port %q of device %s is not a port number (1, 2, ...)", params, f[1], f[0]))
			}
			portNum = uint8(n)
		}
		if !probeAll("") {
			return nil, notFound(fmt.Sprintf("ia_params %q: no local IP address belongs to device %s port %d, so rdma_cm cannot use it (tried %s)",
				params, f[0], portNum, listOrNone(tried)))
		}
	case isNetdev(f[0]):
		if !probeAll(f[0]) {
			why := "it has no IP address"
			if len(tried) > 0 {
				why = "rdma_cm cannot bind its addresses " + strings.Join(tried, ", ") + ": " + probeErr
			}
			return nil, notFound(fmt.Sprintf("ia_params %q: netdev %s is not usable for RDMA: %s (devices: %s)", params, f[0], why, strings.Join(devs.names(), ", ")))
		}
	default:
		cand := net.ParseIP(strings.Trim(f[0], "[]"))
		if cand == nil {
			return nil, notFound(fmt.Sprintf("ia_params %q names no RDMA device (have: %s), netdev or IP address", params, strings.Join(devs.names(), ", ")))
		}
		if !probe(cand) {
			return nil, notFound(fmt.Sprintf("ia_params %q: rdma_cm cannot bind %s to an RDMA device: %s (devices: %s)", params, cand, probeErr, strings.Join(devs.names(), ", ")))
		}
		netdev = netdevOf(cand)
	}
	if !slices.Contains(devs.ctxs, ctx) {
		return nil, notFound(fmt.Sprintf("rdma_cm bound %s to device %s, which rdma_get_devices does not list", ip, ctxName(ctx)))
	}
	d := &device{ctx: ctx, name: ctxName(ctx), netdev: netdev, ip: ip}
	if err := d.query(portNum); err != nil {
		return nil, err
	}
	return d, nil
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "no address"
	}
	return strings.Join(l, ", ")
}

// bindProbe asks rdma_cm which device and port address ip belongs to.
func bindProbe(ip net.IP) (*C.struct_ibv_context, uint8, error) {
	b := []byte(ip.To4())
	if b == nil {
		b = []byte(ip.To16())
	}
	if b == nil {
		return nil, 0, fmt.Errorf("%v is not an IP address", ip)
	}
	var (
		ctx  *C.struct_ibv_context
		port C.uint8_t
	)
	cb := (*C.uint8_t)(C.CBytes(b))
	defer C.free(unsafe.Pointer(cb))
	if rc := C.gd_bind_probe(cb, C.int(len(b)), &ctx, &port); rc != 0 {
		return nil, 0, fmt.Errorf("rdma_bind_addr(%s): %s", ip, errnoText(syscallErrno(rc)))
	}
	return ctx, uint8(port), nil
}

type localAddr struct {
	ip     net.IP
	netdev string
}

// localAddrs lists the usable IP addresses of netdev (of every netdev
// when it is ""): IPv4 first, then global IPv6, loopback last.
func localAddrs(netdev string) []localAddr {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil
	}
	var v4, v6, lo []localAddr
	for _, itf := range ifs {
		if netdev != "" && itf.Name != netdev {
			continue
		}
		addrs, err := itf.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			n, ok := a.(*net.IPNet)
			if !ok || n.IP.IsLinkLocalUnicast() {
				continue
			}
			la := localAddr{ip: n.IP, netdev: itf.Name}
			switch {
			case n.IP.IsLoopback():
				lo = append(lo, la)
			case n.IP.To4() != nil:
				v4 = append(v4, la)
			default:
				v6 = append(v6, la)
			}
		}
	}
	return append(append(v4, v6...), lo...)
}

func isNetdev(name string) bool {
	_, err := net.InterfaceByName(name)
	return err == nil
}

// netdevOf returns the name of the netdev that has address ip, or "".
func netdevOf(ip net.IP) string {
	for _, a := range localAddrs("") {
		if a.ip.Equal(ip) {
			return a.netdev
		}
	}
	return ""
}

// query reads the device and port attributes and the GID of d.ip.
func (d *device) query(portNum uint8) error {
	var a C.struct_ibv_device_attr
	if rc := C.ibv_query_device(d.ctx, &a); rc != 0 {
		return notFound(fmt.Sprintf("ibv_query_device(%s): %s", d.name, errnoText(syscallErrno(rc))))
	}
	caps := uint64(a.device_cap_flags)
	d.attr = devAttr{
		FirmwareVersion: C.GoString(&a.fw_ver[0]),
		NodeGUID:        binary.BigEndian.Uint64(C.GoBytes(unsafe.Pointer(&a.node_guid), 8)),
		VendorID:        uint32(a.vendor_id), VendorPartID: uint32(a.vendor_part_id), HardwareVersion: uint32(a.hw_ver),
		MaxMRSize: uint64(a.max_mr_size),
		MaxQP:     int(a.max_qp), MaxQPWR: int(a.max_qp_wr), MaxSGE: int(a.max_sge), MaxSGERead: int(a.max_sge_rd),
		MaxCQ: int(a.max_cq), MaxCQE: int(a.max_cqe), MaxMR: int(a.max_mr), MaxPD: int(a.max_pd),
		MaxQPRdAtom: int(a.max_qp_rd_atom), MaxQPInitRdAtom: int(a.max_qp_init_rd_atom), MaxResRdAtom: int(a.max_res_rd_atom),
		MaxMW:  int(a.max_mw),
		MaxSRQ: int(a.max_srq), MaxSRQWR: int(a.max_srq_wr), MaxSRQSGE: int(a.max_srq_sge),
		PhysPorts:        int(a.phys_port_cnt),
		MemWindowType2:   caps&(C.IBV_DEVICE_MEM_WINDOW_TYPE_2A|C.IBV_DEVICE_MEM_WINDOW_TYPE_2B) != 0,
		RCEnabled:        true,
		SRQResizeAllowed: caps&C.IBV_DEVICE_SRQ_RESIZE != 0,
	}
	if int(portNum) > d.attr.PhysPorts {
		return notFound(fmt.Sprintf("device %s has %d port(s), not port %d", d.name, d.attr.PhysPorts, portNum))
	}
	var p C.struct_ibv_port_attr
	if rc := C.gd_query_port(d.ctx, C.uint8_t(portNum), &p); rc != 0 {
		return notFound(fmt.Sprintf("ibv_query_port(%s, %d): %s", d.name, portNum, errnoText(syscallErrno(rc))))
	}
	d.port = portAttr{
		Num:        portNum,
		State:      portState(p.state),
		ActiveMTU:  mtuBytes(p.active_mtu),
		MaxMTU:     mtuBytes(p.max_mtu),
		MaxMsgSize: uint32(p.max_msg_sz),
		LinkLayer:  "InfiniBand",
	}
	if p.link_layer == C.IBV_LINK_LAYER_ETHERNET {
		d.port.LinkLayer = "Ethernet"
	}
	d.port.GIDIndex = -1
	// The valid entries of every port's GID table in one call: asking
	// index by index costs a system call each, and rxe's table has 1024
	// mostly empty entries.
	n := int(p.gid_tbl_len) * d.attr.PhysPorts
	if n == 0 {
		return nil
	}
	entries := make([]C.struct_ibv_gid_entry, n)
	got := int(C.gd_query_gid_table(d.ctx, &entries[0], C.size_t(n)))
	if got < 0 {
		return notFound(fmt.Sprintf("ibv_query_gid_table(%s): %s", d.name, errnoText(syscall.Errno(-got))))
	}
	want := d.ip.To16()
	ib := d.port.LinkLayer == "InfiniBand"
	for _, e := range entries[:got] {
		if uint8(e.port_num) != portNum {
			continue
		}
		i := int(e.gid_index)
		raw := C.GoBytes(unsafe.Pointer(&e.gid), 16)
		if (ib && i == 0) || (!ib && net.IP(raw).Equal(want)) {
			better := d.port.GIDIndex < 0 || e.gid_type == C.IBV_GID_TYPE_ROCE_V2
			if better {
				d.port.GIDIndex, d.port.GID, d.port.GIDType = i, gidText(raw), gidType(e.gid_type)
			}
		}
	}
	return nil
}

// gidText formats a GID as ibv_devinfo does: eight groups of four hex
// digits.
func gidText(raw []byte) string {
	var sb strings.Builder
	for i := 0; i < 16; i += 2 {
		if i > 0 {
			sb.WriteByte(':')
		}
		fmt.Fprintf(&sb, "%02x%02x", raw[i], raw[i+1])
	}
	return sb.String()
}

func gidType(t C.uint32_t) string {
	switch t {
	case C.IBV_GID_TYPE_ROCE_V1:
		return "RoCE v1"
	case C.IBV_GID_TYPE_ROCE_V2:
		return "RoCE v2"
	}
	return "IB"
}

func mtuBytes(m C.enum_ibv_mtu) int {
	if m < 1 || m > 5 {
		return 0
	}
	return 128 << int(m)
}

func portState(s C.enum_ibv_port_state) string {
	switch s {
	case C.IBV_PORT_DOWN:
		return "DOWN"
	case C.IBV_PORT_INIT:
		return "INIT"
	case C.IBV_PORT_ARMED:
		return "ARMED"
	case C.IBV_PORT_ACTIVE:
		return "ACTIVE"
	case C.IBV_PORT_ACTIVE_DEFER:
		return "ACTIVE_DEFER"
	}
	return "NOP"
}
