//go:build cabi

package main

/*
#include "cabi.h"
#include <netinet/in.h>
#include <sys/un.h>
*/
import "C"

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"time"
	"unsafe"

	"github.com/godat/godat/api"
)

const success C.DAT_RETURN = 0

func ret(err error) C.DAT_RETURN { return C.DAT_RETURN(api.CodeOf(err)) }

func code(t api.ReturnType, s api.Subtype) C.DAT_RETURN {
	if t == api.Success {
		return success
	}
	return C.DAT_RETURN(api.ClassError | uint32(t) | uint32(s))
}

// badHandle is the answer to a handle that names no object of the kind a
// call takes.
func badHandle(k api.HandleType) C.DAT_RETURN {
	return code(api.InvalidHandle, handleSubtype[k])
}

var handleSubtype = map[api.HandleType]api.Subtype{
	api.HandleIA: api.SubHandleIA, api.HandleEP: api.SubHandleEP, api.HandleLMR: api.SubHandleLMR,
	api.HandleRMR: api.SubHandleRMR, api.HandlePZ: api.SubHandlePZ, api.HandlePSP: api.SubHandlePSP,
	api.HandleRSP: api.SubHandleRSP, api.HandleCR: api.SubHandleCR, api.HandleCNO: api.SubHandleCNO,
	api.HandleSRQ: api.SubHandleSRQ, api.HandleCSP: api.SubHandleCSP, api.HandleEVD: api.NoSubtype,
}

func badArg(n int) C.DAT_RETURN { return code(api.InvalidParameter, api.SubArg1+api.Subtype(n-1)) }

// args checks the handles and pointers a call is given, in the order the
// call names them, and keeps the return code of the first that is bad;
// after it, it checks nothing. So a call states all its checks and then
// tests r once, and answers as it would had it returned at the first bad
// one. The zero value has found nothing bad. It lives on the stack and
// allocates nothing.
type args struct{ r C.DAT_RETURN }

// obj resolves h, which must be a handle of kind k.
func (a *args) obj(h unsafe.Pointer, k api.HandleType) *obj {
	if a.r != success {
		return nil
	}
	o := lookup(h, k)
	if o == nil {
		a.r = badHandle(k)
	}
	return o
}

// anyObj resolves h, which may be a handle of any kind.
func (a *args) anyObj(h unsafe.Pointer) *obj {
	if a.r != success {
		return nil
	}
	o := lookupAny(h)
	if o == nil {
		a.r = code(api.InvalidHandle, api.NoSubtype)
	}
	return o
}

// ia resolves h, which must be an IA handle.
func (a *args) ia(h unsafe.Pointer) *iaObj {
	if o := a.obj(h, api.HandleIA); o != nil {
		return o.ia
	}
	return nil
}

// arg checks argument n (counted from 1) of the call: ok says it is good.
func (a *args) arg(ok bool, n int) {
	if a.r == success && !ok {
		a.r = badArg(n)
	}
}

// optArg resolves h, nil or a handle of kind k, to the object it names
// as the api interface T of k's objects (nil for nil).
func optArg[T any](a *args, h unsafe.Pointer, k api.HandleType) T {
	var v T
	if h != nil {
		if o := a.obj(h, k); o != nil {
			v = o.v.(T)
		}
	}
	return v
}

// The optional handle arguments, by kind.
func (a *args) optEP(h unsafe.Pointer) api.EP   { return optArg[api.EP](a, h, api.HandleEP) }
func (a *args) optLMR(h unsafe.Pointer) api.LMR { return optArg[api.LMR](a, h, api.HandleLMR) }
func (a *args) optCNO(h unsafe.Pointer) api.CNO { return optArg[api.CNO](a, h, api.HandleCNO) }

// evd resolves h, which must be an EVD handle; a bad one is answered with
// sub, the subtype of the EVD's role in the call.
func (a *args) evd(h unsafe.Pointer, sub api.Subtype) api.EVD {
	if a.r != success {
		return nil
	}
	o := lookup(h, api.HandleEVD)
	if o == nil {
		a.r = code(api.InvalidHandle, sub)
		return nil
	}
	return o.v.(api.EVD)
}

// optEVD is evd for the EVDs of an EP, which may be nil.
func (a *args) optEVD(h unsafe.Pointer, sub api.Subtype) api.EVD {
	if h == nil {
		return nil
	}
	return a.evd(h, sub)
}

// counted checks argument arg of a call, p, that points at n items (of
// private data, of an I/O vector): n may not be negative, and p is nil
// only if n is 0.
func (a *args) counted(n C.DAT_COUNT, p unsafe.Pointer, arg int) {
	a.arg(n >= 0 && (n == 0 || p != nil), arg)
}

// querier is an object whose parameters a dat_*_query call reads.
type querier[Q any] interface{ Query() (Q, error) }

// query answers a dat_*_query on h, a handle of kind k naming a T: fill
// writes the parameters q that T's Query returns into the C block p, and
// reports false when C memory the answer needs could not be allocated
// (noCMem).
func query[T querier[Q], Q, P any](h unsafe.Pointer, k api.HandleType, p *P, fill func(o *obj, q Q, p *P) bool) C.DAT_RETURN {
	var a args
	o := a.obj(h, k)
	a.arg(p != nil, 3)
	if a.r != success {
		return a.r
	}
	q, err := o.v.(T).Query()
	if err != nil {
		return ret(err)
	}
	if !fill(o, q, p) {
		return noCMem
	}
	return success
}

// timeout converts a DAT_TIMEOUT (microseconds, ~0 infinite).
func timeout(t C.DAT_TIMEOUT) api.Timeout {
	if t == C.DAT_TIMEOUT(^uint32(0)) {
		return api.TimeoutInfinite
	}
	return time.Duration(t) * time.Microsecond
}

// waitContext is the context of a blocking call with timeout t.
func waitContext(t C.DAT_TIMEOUT) (context.Context, context.CancelFunc) {
	if t == C.DAT_TIMEOUT(^uint32(0)) {
		return context.Background(), func() {}
	}
	return context.WithTimeout(context.Background(), time.Duration(t)*time.Microsecond)
}

// goAddr reads a C socket address.
func goAddr(sa *C.struct_sockaddr) (net.Addr, bool) {
	if sa == nil {
		return nil, false
	}
	switch sa.sa_family {
	case C.AF_INET:
		in := (*C.struct_sockaddr_in)(unsafe.Pointer(sa))
		b := (*[4]byte)(unsafe.Pointer(&in.sin_addr))
		port := int(in.sin_port>>8 | (in.sin_port&0xff)<<8)
		return &net.TCPAddr{IP: net.IP(b[:]).To16(), Port: port}, true
	case C.AF_INET6:
		in := (*C.struct_sockaddr_in6)(unsafe.Pointer(sa))
		b := (*[16]byte)(unsafe.Pointer(&in.sin6_addr))
		port := int(in.sin6_port>>8 | (in.sin6_port&0xff)<<8)
		return &net.TCPAddr{IP: append(net.IP(nil), b[:]...), Port: port}, true
	case C.AF_UNIX:
		un := (*C.struct_sockaddr_un)(unsafe.Pointer(sa))
		path := unsafe.Slice((*byte)(unsafe.Pointer(&un.sun_path[0])), len(un.sun_path))
		if path[0] != 0 {
			return nil, false
		}
		n := 1
		for n < len(path) && path[n] != 0 {
			n++
		}
		if a, ok := otherAddrs.Load(string(path[1:n])); ok {
			return a.(net.Addr), true
		}
	}
	return nil, false
}

// otherAddrs maps the keys of the addresses that are not IP (a loopback
// IA's, say) to the addresses. C has no family for them: the library hands
// them out as abstract AF_UNIX addresses whose name is the key, and reads
// them back through this map, so they work within the process.
var otherAddrs sync.Map // string -> net.Addr

func otherKey(a net.Addr) string {
	k := "godat:" + a.Network() + ":" + a.String()
	if len(k) > 100 {
		k = k[:100]
	}
	return k
}

// putAddr writes a into the C socket address storage at p (addrSize
// bytes): an IP address as AF_INET or AF_INET6, any other as an abstract
// AF_UNIX name (otherAddrs), nil as AF_UNSPEC.
func putAddr(p unsafe.Pointer, a net.Addr) {
	C.memset(p, 0, addrSize)
	var ap netip.AddrPort
	switch v := a.(type) {
	case *net.TCPAddr:
		ap = v.AddrPort()
	case *net.UDPAddr:
		ap = v.AddrPort()
	case *net.IPAddr:
		ip, _ := netip.AddrFromSlice(v.IP)
		ap = netip.AddrPortFrom(ip, 0)
	default:
		if a == nil {
			return
		}
		if x, err := netip.ParseAddrPort(a.String()); err == nil {
			ap = x
		} else if ip, err := netip.ParseAddr(a.String()); err == nil {
			ap = netip.AddrPortFrom(ip, 0)
		} else {
			k := otherKey(a)
			otherAddrs.Store(k, a)
			un := (*C.struct_sockaddr_un)(p)
			un.sun_family = C.AF_UNIX
			copy(unsafe.Slice((*byte)(unsafe.Pointer(&un.sun_path[1])), len(un.sun_path)-1), k)
			return
		}
	}
	ip := ap.Addr().Unmap()
	port := ap.Port()
	nport := C.uint16_t(port>>8 | port<<8)
	switch {
	case ip.Is4():
		in := (*C.struct_sockaddr_in)(p)
		in.sin_family = C.AF_INET
		in.sin_port = nport
		b := ip.As4()
		*(*[4]byte)(unsafe.Pointer(&in.sin_addr)) = b
	case ip.Is6():
		in := (*C.struct_sockaddr_in6)(p)
		in.sin6_family = C.AF_INET6
		in.sin6_port = nport
		b := ip.As16()
		*(*[16]byte)(unsafe.Pointer(&in.sin6_addr)) = b
	}
}

// addrSize is the C memory kept for one address: a sockaddr_storage.
const addrSize = C.sizeof_struct_sockaddr_storage

// cbytes copies n bytes at p into Go memory.
func cbytes(p unsafe.Pointer, n C.DAT_COUNT) []byte {
	if p == nil || n <= 0 {
		return nil
	}
	return C.GoBytes(p, C.int(n))
}

// putName copies s into a C char array of DAT_NAME_MAX_LENGTH bytes.
func putName(dst *C.char, s string) {
	b := unsafe.Slice((*byte)(unsafe.Pointer(dst)), C.DAT_NAME_MAX_LENGTH)
	n := copy(b[:len(b)-1], s)
	b[n] = 0
}

func boolean(b bool) C.DAT_BOOLEAN {
	if b {
		return C.DAT_TRUE
	}
	return C.DAT_FALSE
}

// cstrings keeps one C copy of each string the library hands out for the
// life of the process (error names).
var cstrings struct {
	sync.Mutex
	m map[string]*C.char
}

func cstring(s string) *C.char {
	cstrings.Lock()
	defer cstrings.Unlock()
	if p, ok := cstrings.m[s]; ok {
		return p
	}
	if cstrings.m == nil {
		cstrings.m = make(map[string]*C.char)
	}
	p := C.CString(s)
	cstrings.m[s] = p
	return p
}

//export go_strerror
func go_strerror(v C.DAT_RETURN, major, minor **C.char) C.DAT_RETURN {
	if major == nil {
		return badArg(2)
	}
	t := api.ReturnType(uint32(v) & 0x3fff0000)
	s := api.Subtype(uint32(v) & 0xffff)
	*major = cstring(t.String())
	if minor != nil {
		*minor = cstring(s.String())
	}
	return success
}
