package wire

// Conversions between the api types and their protocol messages. Object
// handles are not converted here: each side maps them to ids with its own
// table (plugin/server.go, plugin/host/objects.go).

import (
	"errors"
	"net"
	"reflect"
	"strings"

	"github.com/godat/godat/api"
	pb "github.com/godat/godat/plugin/proto"
)

// ErrToPB converts the error of a provider call for the wire. An error that
// is not an *api.Error travels as DAT_INTERNAL_ERROR with its text. One that
// wraps an *api.Error travels as that error, with the wrapper's words
// around its message: the host rebuilds the type, subtype and message only.
func ErrToPB(err error) *pb.Err {
	if err == nil {
		return nil
	}
	var e *api.Error
	if errors.As(err, &e) {
		msg := e.Msg
		if e.Cause != nil {
			if msg != "" {
				msg += ": "
			}
			msg += e.Cause.Error()
		}
		if err != error(e) {
			msg = strings.Replace(err.Error(), e.Error(), msg, 1)
		}
		return &pb.Err{Type: uint32(e.Type), Sub: uint32(e.Sub), Msg: msg}
	}
	return &pb.Err{Type: uint32(api.InternalError), Msg: err.Error()}
}

// ErrFromPB rebuilds the *api.Error of a call, nil for none.
func ErrFromPB(e *pb.Err) error {
	if e == nil {
		return nil
	}
	return &api.Error{Type: api.ReturnType(e.Type), Sub: api.Subtype(e.Sub), Msg: e.Msg}
}

// Addr is a network address that crossed the plugin boundary: the host
// sees every address a plugin reports (IA, EP and connection-request
// addresses) as an Addr, and passes it back unchanged to Connect.
type Addr struct {
	Net string // what the provider's address returned from Network
	Str string // what it returned from String
}

// Network returns the address's network name, as the provider gave it.
func (a Addr) Network() string { return a.Net }

// String returns the address in the provider's own form.
func (a Addr) String() string { return a.Str }

func AddrToPB(a net.Addr) *pb.Addr {
	if a == nil {
		return nil
	}
	return &pb.Addr{Network: a.Network(), Address: a.String()}
}

// AddrFromPB is the host's view of an address: nil or an Addr.
func AddrFromPB(a *pb.Addr) net.Addr {
	if a == nil {
		return nil
	}
	return Addr{Net: a.Network, Str: a.Address}
}

func namedToPB(in []api.NamedAttr) []*pb.NamedAttr {
	var out []*pb.NamedAttr
	for _, a := range in {
		out = append(out, &pb.NamedAttr{Name: a.Name, Value: a.Value})
	}
	return out
}

func namedFromPB(in []*pb.NamedAttr) []api.NamedAttr {
	var out []api.NamedAttr
	for _, a := range in {
		out = append(out, api.NamedAttr{Name: a.Name, Value: a.Value})
	}
	return out
}

func IAAttrToPB(a api.IAAttr) *pb.IAAttr {
	return &pb.IAAttr{
		AdapterName: a.AdapterName, VendorName: a.VendorName,
		HardwareVersionMajor: a.HardwareVersionMajor, HardwareVersionMinor: a.HardwareVersionMinor,
		FirmwareVersionMajor: a.FirmwareVersionMajor, FirmwareVersionMinor: a.FirmwareVersionMinor,
		Address: AddrToPB(a.Address), MaxEps: int64(a.MaxEPs), MaxDtoPerEp: int64(a.MaxDTOPerEP),
		MaxRdmaReadPerEpIn: int64(a.MaxRDMAReadPerEPIn), MaxRdmaReadPerEpOut: int64(a.MaxRDMAReadPerEPOut),
		MaxEvds: int64(a.MaxEVDs), MaxEvdQlen: int64(a.MaxEVDQLen), MaxIovSegmentsPerDto: int64(a.MaxIOVSegmentsPerDTO),
		MaxLmrs: int64(a.MaxLMRs), MaxLmrBlockSize: a.MaxLMRBlockSize, MaxLmrVirtualAddress: uint64(a.MaxLMRVirtualAddress),
		MaxPzs: int64(a.MaxPZs), MaxMessageSize: a.MaxMessageSize, MaxRdmaSize: a.MaxRDMASize, MaxRmrs: int64(a.MaxRMRs),
		MaxRmrTargetAddress: uint64(a.MaxRMRTargetAddress), MaxSrqs: int64(a.MaxSRQs), MaxEpPerSrq: int64(a.MaxEPPerSRQ),
		MaxRecvPerSrq: int64(a.MaxRecvPerSRQ), MaxIovSegmentsPerRdmaRead: int64(a.MaxIOVSegmentsPerRDMARead),
		MaxIovSegmentsPerRdmaWrite: int64(a.MaxIOVSegmentsPerRDMAWrite), MaxRdmaReadIn: int64(a.MaxRDMAReadIn),
		MaxRdmaReadOut: int64(a.MaxRDMAReadOut), MaxRdmaReadPerEpInGuaranteed: a.MaxRDMAReadPerEPInGuaranteed,
		MaxRdmaReadPerEpOutGuaranteed: a.MaxRDMAReadPerEPOutGuaranteed, ZbSupported: a.ZBSupported,
		TransportAttrs: namedToPB(a.TransportAttrs), VendorAttrs: namedToPB(a.VendorAttrs),
	}
}

func IAAttrFromPB(a *pb.IAAttr) api.IAAttr {
	if a == nil {
		return api.IAAttr{}
	}
	return api.IAAttr{
		AdapterName: a.AdapterName, VendorName: a.VendorName,
		HardwareVersionMajor: a.HardwareVersionMajor, HardwareVersionMinor: a.HardwareVersionMinor,
		FirmwareVersionMajor: a.FirmwareVersionMajor, FirmwareVersionMinor: a.FirmwareVersionMinor,
		Address: AddrFromPB(a.Address), MaxEPs: int(a.MaxEps), MaxDTOPerEP: int(a.MaxDtoPerEp),
		MaxRDMAReadPerEPIn: int(a.MaxRdmaReadPerEpIn), MaxRDMAReadPerEPOut: int(a.MaxRdmaReadPerEpOut),
		MaxEVDs: int(a.MaxEvds), MaxEVDQLen: int(a.MaxEvdQlen), MaxIOVSegmentsPerDTO: int(a.MaxIovSegmentsPerDto),
		MaxLMRs: int(a.MaxLmrs), MaxLMRBlockSize: a.MaxLmrBlockSize, MaxLMRVirtualAddress: api.VAddr(a.MaxLmrVirtualAddress),
		MaxPZs: int(a.MaxPzs), MaxMessageSize: a.MaxMessageSize, MaxRDMASize: a.MaxRdmaSize, MaxRMRs: int(a.MaxRmrs),
		MaxRMRTargetAddress: api.VAddr(a.MaxRmrTargetAddress), MaxSRQs: int(a.MaxSrqs), MaxEPPerSRQ: int(a.MaxEpPerSrq),
		MaxRecvPerSRQ: int(a.MaxRecvPerSrq), MaxIOVSegmentsPerRDMARead: int(a.MaxIovSegmentsPerRdmaRead),
		MaxIOVSegmentsPerRDMAWrite: int(a.MaxIovSegmentsPerRdmaWrite), MaxRDMAReadIn: int(a.MaxRdmaReadIn),
		MaxRDMAReadOut: int(a.MaxRdmaReadOut), MaxRDMAReadPerEPInGuaranteed: a.MaxRdmaReadPerEpInGuaranteed,
		MaxRDMAReadPerEPOutGuaranteed: a.MaxRdmaReadPerEpOutGuaranteed, ZBSupported: a.ZbSupported,
		TransportAttrs: namedFromPB(a.TransportAttrs), VendorAttrs: namedFromPB(a.VendorAttrs),
	}
}

func ProviderAttrToPB(a api.ProviderAttr) *pb.ProviderAttr {
	return &pb.ProviderAttr{
		ProviderName: a.ProviderName, ProviderVersionMajor: a.ProviderVersionMajor, ProviderVersionMinor: a.ProviderVersionMinor,
		DaplVersionMajor: a.DAPLVersionMajor, DaplVersionMinor: a.DAPLVersionMinor,
		LmrMemTypesSupported: uint32(a.LMRMemTypesSupported), IovOwnershipOnReturn: uint32(a.IOVOwnershipOnReturn),
		QosSupported: uint32(a.QOSSupported), CompletionFlagsSupported: uint32(a.CompletionFlagsSupported),
		ThreadSafe: a.ThreadSafe, MaxPrivateDataSize: int64(a.MaxPrivateDataSize), SupportsMultipath: a.SupportsMultipath,
		EpCreator: uint32(a.EPCreator), PzSupport: uint32(a.PZSupport), OptimalBufferAlignment: a.OptimalBufferAlignment,
		SrqSupported: a.SRQSupported, SrqWatermarksSupported: int64(a.SRQWatermarksSupported),
		SrqEpPzDifferenceSupported: a.SRQEPPZDifferenceSupported, SrqInfoSupported: int64(a.SRQInfoSupported),
		EpRecvInfoSupported: int64(a.EPRecvInfoSupported), LmrSyncRequired: a.LMRSyncRequired,
		DtoAsyncReturnGuaranteed: a.DTOAsyncReturnGuaranteed, RdmaWriteForRdmaReadRequired: a.RDMAWriteForRDMAReadRequired,
		RdmaReadLmrRmrContextExposure: a.RDMAReadLMRRMRContextExposure, RmrScopeSupported: uint32(a.RMRScopeSupported),
		SignalSafe: a.SignalSafe, HaSupported: a.HASupported, ProviderSpecific: namedToPB(a.ProviderSpecific),
	}
}

func ProviderAttrFromPB(a *pb.ProviderAttr) api.ProviderAttr {
	if a == nil {
		return api.ProviderAttr{}
	}
	return api.ProviderAttr{
		ProviderName: a.ProviderName, ProviderVersionMajor: a.ProviderVersionMajor, ProviderVersionMinor: a.ProviderVersionMinor,
		DAPLVersionMajor: a.DaplVersionMajor, DAPLVersionMinor: a.DaplVersionMinor,
		LMRMemTypesSupported: api.MemType(a.LmrMemTypesSupported), IOVOwnershipOnReturn: api.IOVOwnership(a.IovOwnershipOnReturn),
		QOSSupported: api.QOS(a.QosSupported), CompletionFlagsSupported: api.CompletionFlags(a.CompletionFlagsSupported),
		ThreadSafe: a.ThreadSafe, MaxPrivateDataSize: int(a.MaxPrivateDataSize), SupportsMultipath: a.SupportsMultipath,
		EPCreator: api.EPCreatorForPSP(a.EpCreator), PZSupport: api.PZSupport(a.PzSupport), OptimalBufferAlignment: a.OptimalBufferAlignment,
		SRQSupported: a.SrqSupported, SRQWatermarksSupported: int(a.SrqWatermarksSupported),
		SRQEPPZDifferenceSupported: a.SrqEpPzDifferenceSupported, SRQInfoSupported: int(a.SrqInfoSupported),
		EPRecvInfoSupported: int(a.EpRecvInfoSupported), LMRSyncRequired: a.LmrSyncRequired,
		DTOAsyncReturnGuaranteed: a.DtoAsyncReturnGuaranteed, RDMAWriteForRDMAReadRequired: a.RdmaWriteForRdmaReadRequired,
		RDMAReadLMRRMRContextExposure: a.RdmaReadLmrRmrContextExposure, RMRScopeSupported: api.RMRScope(a.RmrScopeSupported),
		SignalSafe: a.SignalSafe, HASupported: a.HaSupported, ProviderSpecific: namedFromPB(a.ProviderSpecific),
	}
}

func EPAttrToPB(a *api.EPAttr) *pb.EPAttr {
	if a == nil {
		return nil
	}
	return &pb.EPAttr{
		ServiceType: uint32(a.ServiceType), MaxMessageSize: a.MaxMessageSize, MaxRdmaSize: a.MaxRDMASize, Qos: uint32(a.QOS),
		RecvCompletionFlags: uint32(a.RecvCompletionFlags), RequestCompletionFlags: uint32(a.RequestCompletionFlags),
		MaxRecvDtos: int64(a.MaxRecvDTOs), MaxRequestDtos: int64(a.MaxRequestDTOs), MaxRecvIov: int64(a.MaxRecvIOV),
		MaxRequestIov: int64(a.MaxRequestIOV), MaxRdmaReadIn: int64(a.MaxRDMAReadIn), MaxRdmaReadOut: int64(a.MaxRDMAReadOut),
		SrqSoftHighWatermark: int64(a.SRQSoftHighWatermark), MaxRdmaReadIov: int64(a.MaxRDMAReadIOV),
		MaxRdmaWriteIov: int64(a.MaxRDMAWriteIOV), TransportSpecific: namedToPB(a.TransportSpecific),
		ProviderSpecific: namedToPB(a.ProviderSpecific),
	}
}

func EPAttrFromPB(a *pb.EPAttr) *api.EPAttr {
	if a == nil {
		return nil
	}
	return &api.EPAttr{
		ServiceType: api.ServiceType(a.ServiceType), MaxMessageSize: a.MaxMessageSize, MaxRDMASize: a.MaxRdmaSize, QOS: api.QOS(a.Qos),
		RecvCompletionFlags: api.CompletionFlags(a.RecvCompletionFlags), RequestCompletionFlags: api.CompletionFlags(a.RequestCompletionFlags),
		MaxRecvDTOs: int(a.MaxRecvDtos), MaxRequestDTOs: int(a.MaxRequestDtos), MaxRecvIOV: int(a.MaxRecvIov),
		MaxRequestIOV: int(a.MaxRequestIov), MaxRDMAReadIn: int(a.MaxRdmaReadIn), MaxRDMAReadOut: int(a.MaxRdmaReadOut),
		SRQSoftHighWatermark: int(a.SrqSoftHighWatermark), MaxRDMAReadIOV: int(a.MaxRdmaReadIov),
		MaxRDMAWriteIOV: int(a.MaxRdmaWriteIov), TransportSpecific: namedFromPB(a.TransportSpecific),
		ProviderSpecific: namedFromPB(a.ProviderSpecific),
	}
}

func LMRTripletsToPB(iov []api.LMRTriplet) []*pb.LMRTriplet {
	out := make([]*pb.LMRTriplet, len(iov))
	for i, t := range iov {
		out[i] = &pb.LMRTriplet{Addr: uint64(t.Addr), Length: t.Length, LmrContext: uint32(t.LMRContext)}
	}
	return out
}

func LMRTripletsFromPB(in []*pb.LMRTriplet) []api.LMRTriplet {
	out := make([]api.LMRTriplet, len(in))
	for i, t := range in {
		out[i] = LMRTripletFromPB(t)
	}
	return out
}

func LMRTripletFromPB(t *pb.LMRTriplet) api.LMRTriplet {
	if t == nil {
		return api.LMRTriplet{}
	}
	return api.LMRTriplet{Addr: api.VAddr(t.Addr), Length: t.Length, LMRContext: api.LMRContext(t.LmrContext)}
}

func LMRTripletToPB(t api.LMRTriplet) *pb.LMRTriplet {
	return &pb.LMRTriplet{Addr: uint64(t.Addr), Length: t.Length, LmrContext: uint32(t.LMRContext)}
}

func RMRTripletToPB(t api.RMRTriplet) *pb.RMRTriplet {
	return &pb.RMRTriplet{Addr: uint64(t.Addr), Length: t.Length, RmrContext: uint32(t.RMRContext)}
}

func RMRTripletFromPB(t *pb.RMRTriplet) api.RMRTriplet {
	if t == nil {
		return api.RMRTriplet{}
	}
	return api.RMRTriplet{Addr: api.VAddr(t.Addr), Length: t.Length, RMRContext: api.RMRContext(t.RmrContext)}
}

// IsNilObject reports an interface holding a nil pointer, which providers
// should not return but might.
func IsNilObject(obj any) bool {
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// HandleSubtype is the DAT subtype that names an invalid handle of type t.
func HandleSubtype(t api.HandleType) api.Subtype {
	switch t {
	case api.HandleIA:
		return api.SubHandleIA
	case api.HandleEP:
		return api.SubHandleEP
	case api.HandleLMR:
		return api.SubHandleLMR
	case api.HandleRMR:
		return api.SubHandleRMR
	case api.HandlePZ:
		return api.SubHandlePZ
	case api.HandlePSP:
		return api.SubHandlePSP
	case api.HandleRSP:
		return api.SubHandleRSP
	case api.HandleCR:
		return api.SubHandleCR
	case api.HandleCNO:
		return api.SubHandleCNO
	case api.HandleEVD:
		return api.SubHandleEVDRequest
	case api.HandleSRQ:
		return api.SubHandleSRQ
	}
	return api.NoSubtype
}
