//go:build verbs && cgo

package verbs

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/godat/godat/api"
)

// Limits of the provider's own making; everything else the IA reports
// comes from the device.
const (
	// maxEVDQLen bounds the async EVD, whose queue is in Go memory.
	maxEVDQLen = 1 << 20
	// maxPrivateData is the private data godat carries in a connect
	// request over the InfiniBand CM (IB and RoCE): the 92 bytes of a CM
	// REQ, less the 36 that rdma_cm uses for its own header, less godat's
	// two-byte length header (cm.go). Accept and reject carry more, so
	// the smallest bounds all three.
	maxPrivateData = 56 - pdHeader
	// providerVersion is the version godat reports for this provider.
	providerVersionMajor, providerVersionMinor = 1, 0
)

// iaAttr turns the device's limits into the IA attributes
// (dat_ia_query(3DAT)).
func iaAttr(d *device, addr net.Addr) api.IAAttr {
	a := d.attr
	msg := d.port.MaxMsgSize
	return api.IAAttr{
		VendorName:           fmt.Sprintf("rdma-core %s (vendor 0x%x part %d)", d.name, a.VendorID, a.VendorPartID),
		HardwareVersionMajor: a.HardwareVersion,
		FirmwareVersionMajor: 0,
		Address:              addr,
		MaxEPs:               a.MaxQP,
		MaxDTOPerEP:          a.MaxQPWR,
		MaxRDMAReadPerEPIn:   a.MaxQPRdAtom,
		MaxRDMAReadPerEPOut:  a.MaxQPInitRdAtom,
		MaxEVDs:              a.MaxCQ,
		MaxEVDQLen:           a.MaxCQE,
		MaxIOVSegmentsPerDTO: a.MaxSGE,
		MaxLMRs:              a.MaxMR,
		MaxLMRBlockSize:      min(a.MaxMRSize, 1<<63-1), // rxe reports 2^64-1

		MaxLMRVirtualAddress:          api.VAddr(1<<64 - 1),
		MaxPZs:                        a.MaxPD,
		MaxMessageSize:                msg,
		MaxRDMASize:                   msg,
		MaxRMRs:                       a.MaxMW,
		MaxRMRTargetAddress:           api.VAddr(1<<64 - 1),
		MaxSRQs:                       a.MaxSRQ,
		MaxEPPerSRQ:                   a.MaxQP,
		MaxRecvPerSRQ:                 a.MaxSRQWR,
		MaxIOVSegmentsPerRDMARead:     a.MaxSGERead,
		MaxIOVSegmentsPerRDMAWrite:    a.MaxSGE,
		MaxRDMAReadIn:                 a.MaxResRdAtom,
		MaxRDMAReadOut:                a.MaxQPInitRdAtom * a.MaxQP,
		MaxRDMAReadPerEPInGuaranteed:  true,
		MaxRDMAReadPerEPOutGuaranteed: true,
		ZBSupported:                   true,
		TransportAttrs: []api.NamedAttr{
			{Name: "device", Value: d.name},
			{Name: "port", Value: strconv.Itoa(int(d.port.Num))},
			{Name: "netdev", Value: d.netdev},
			{Name: "link_layer", Value: d.port.LinkLayer},
			{Name: "port_state", Value: d.port.State},
			{Name: "gid", Value: d.port.GID},
			{Name: "gid_index", Value: strconv.Itoa(d.port.GIDIndex)},
			{Name: "gid_type", Value: d.port.GIDType},
			{Name: "active_mtu", Value: strconv.Itoa(d.port.ActiveMTU)},
			{Name: "max_mtu", Value: strconv.Itoa(d.port.MaxMTU)},
		},
		VendorAttrs: []api.NamedAttr{
			{Name: "fw_ver", Value: a.FirmwareVersion},
			{Name: "node_guid", Value: guidText(a.NodeGUID)},
			{Name: "vendor_id", Value: fmt.Sprintf("0x%x", a.VendorID)},
			{Name: "vendor_part_id", Value: strconv.FormatUint(uint64(a.VendorPartID), 10)},
			{Name: "hw_ver", Value: fmt.Sprintf("0x%x", a.HardwareVersion)},
			{Name: "max_qp", Value: strconv.Itoa(a.MaxQP)},
			{Name: "max_qp_wr", Value: strconv.Itoa(a.MaxQPWR)},
			{Name: "max_cq", Value: strconv.Itoa(a.MaxCQ)},
			{Name: "max_cqe", Value: strconv.Itoa(a.MaxCQE)},
			{Name: "max_mr", Value: strconv.Itoa(a.MaxMR)},
			{Name: "max_mr_size", Value: strconv.FormatUint(a.MaxMRSize, 10)},
			{Name: "max_sge", Value: strconv.Itoa(a.MaxSGE)},
			{Name: "max_sge_rd", Value: strconv.Itoa(a.MaxSGERead)},
			{Name: "max_qp_rd_atom", Value: strconv.Itoa(a.MaxQPRdAtom)},
			{Name: "max_qp_init_rd_atom", Value: strconv.Itoa(a.MaxQPInitRdAtom)},
			{Name: "max_mw", Value: strconv.Itoa(a.MaxMW)},
			{Name: "mw_type2", Value: strconv.FormatBool(a.MemWindowType2)},
			{Name: "max_srq", Value: strconv.Itoa(a.MaxSRQ)},
			{Name: "max_srq_wr", Value: strconv.Itoa(a.MaxSRQWR)},
			{Name: "phys_port_cnt", Value: strconv.Itoa(a.PhysPorts)},
		},
	}
}

// providerAttr is what the provider supports on device d
// (dat_ia_query(3DAT)).
func providerAttr(d *device) api.ProviderAttr {
	return api.ProviderAttr{
		ProviderName:                  "verbs",
		ProviderVersionMajor:          providerVersionMajor,
		ProviderVersionMinor:          providerVersionMinor,
		DAPLVersionMajor:              2,
		DAPLVersionMinor:              0,
		LMRMemTypesSupported:          api.MemTypeVirtual | api.MemTypeLMR | api.MemTypeSharedVirtual,
		IOVOwnershipOnReturn:          api.IOVConsumer,
		QOSSupported:                  api.QOSBestEffort,
		CompletionFlagsSupported:      api.CompletionSuppress | api.CompletionSolicitedWait | api.CompletionUnsignalled | api.CompletionBarrierFence,
		ThreadSafe:                    true,
		MaxPrivateDataSize:            maxPrivateData,
		EPCreator:                     api.PSPCreatesEPNever,
		PZSupport:                     api.PZUnique,
		OptimalBufferAlignment:        64,
		SRQSupported:                  d.attr.MaxSRQ > 0,
		SRQWatermarksSupported:        1,
		SRQEPPZDifferenceSupported:    true,
		DTOAsyncReturnGuaranteed:      true,
		RMRScopeSupported:             api.RMRScopeEP,
		RDMAReadLMRRMRContextExposure: false,
		ProviderSpecific: append([]api.NamedAttr{
			{Name: "rdma_core_device", Value: d.name},
			{Name: "rmr", Value: rmrMode(d)},
		}, deviations(d)...),
	}
}

// deviations are the rules of the conformance suite that cannot hold on
// device d, each with the reason (conformance.DeviationPrefix).
func deviations(d *device) []api.NamedAttr {
	out := []api.NamedAttr{{
		Name:  "conformance.deviation.private-data-min-64",
		Value: fmt.Sprintf("rdma_cm carries at most 56 bytes of private data in a connect request over the InfiniBand CM (IB and RoCE); godat uses 2 of them for the length, leaving %d", maxPrivateData),
	}}
	if strings.HasPrefix(d.name, "rxe") {
		out = append(out, api.NamedAttr{
			Name:  "conformance.deviation.recv-length-status",
			Value: "soft-RoCE (rdma_rxe) completes a receive too small for the message with IBV_WC_LOC_QP_OP_ERR (DTO_ERR_LOCAL_EP), not IBV_WC_LOC_LEN_ERR",
		}, api.NamedAttr{
			Name:  "conformance.deviation.rmr-window-bounds",
			Value: "soft-RoCE (rdma_rxe, Linux 6.1) checks an access through a memory window against the range of the window's MR, not of the window",
		}, api.NamedAttr{
			Name:  "conformance.deviation.rmr-invalidate-scope",
			Value: "soft-RoCE (rdma_rxe, Linux 6.1) invalidates a type 2 memory window named by a send-with-invalidate that arrives on any QP of the window's PD, not only on the QP the window is bound to",
		})
	}
	return out
}

// rmrMode says how RMRs are made on device d.
func rmrMode(d *device) string {
	if d.attr.MemWindowType2 {
		return "type 2 memory windows"
	}
	return "not supported by the device (no type 2 memory windows)"
}

// guidText formats a GUID as ibv_devinfo does.
func guidText(g uint64) string {
	return fmt.Sprintf("%04x:%04x:%04x:%04x", g>>48, g>>32&0xffff, g>>16&0xffff, g&0xffff)
}
