package main

import (
	"encoding/json"
	"reflect"
	"regexp"
	"testing"

	"github.com/godat/godat/api"
)

// snakeCase is the one form of every key datinfo's JSON has.
var snakeCase = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// walkKeys calls f with the path and name of every object key in v, a
// value decoded from JSON, at every depth.
func walkKeys(path string, v any, f func(path, key string)) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			f(path, k)
			walkKeys(path+"."+k, e, f)
		}
	case []any:
		for _, e := range x {
			walkKeys(path+"[]", e, f)
		}
	}
}

// Every key of "datinfo --json" and "datinfo --json check", at every
// depth, is snake_case: the configuration's keys, the attribute objects
// of opened IAs (the test provider's, loopback's, tcp's), the named
// attributes, the problems of a bad file.
func TestJSONKeysAreSnakeCase(t *testing.T) {
	isolate(t)
	good := writeFile(t, "dat.conf", testConfig)
	bad := writeFile(t, "bad.conf", brokenConfig)
	keys := 0
	for _, args := range [][]string{{"--json", "-f", good}, {"--json", "check", good, bad}} {
		_, out, _ := runDatinfo(t, args...)
		var v any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("datinfo %q: %v:\n%s", args, err, out)
		}
		walkKeys("", v, func(path, key string) {
			keys++
			if !snakeCase.MatchString(key) {
				t.Errorf("datinfo %q: key %q at %q is not snake_case", args, key, path)
			}
		})
	}
	// Not a vacuous walk: the attributes of three opened IAs are in it.
	if n := 3 * (reflect.TypeOf(api.IAAttr{}).NumField() + reflect.TypeOf(api.ProviderAttr{}).NumField()); keys < n {
		t.Errorf("walked %d keys, fewer than the %d attribute keys of three opened IAs", keys, n)
	}
}

// The key of every attribute field, spelled out: this is the stable
// interface scripts read, and a new field shows its key here.
func TestJSONAttrKeys(t *testing.T) {
	want := map[string]string{
		"AdapterName": "adapter_name", "VendorName": "vendor_name",
		"HardwareVersionMajor": "hardware_version_major", "HardwareVersionMinor": "hardware_version_minor",
		"FirmwareVersionMajor": "firmware_version_major", "FirmwareVersionMinor": "firmware_version_minor",
		"Address": "address", "MaxEPs": "max_eps", "MaxDTOPerEP": "max_dto_per_ep",
		"MaxRDMAReadPerEPIn": "max_rdma_read_per_ep_in", "MaxRDMAReadPerEPOut": "max_rdma_read_per_ep_out",
		"MaxEVDs": "max_evds", "MaxEVDQLen": "max_evd_qlen", "MaxIOVSegmentsPerDTO": "max_iov_segments_per_dto",
		"MaxLMRs": "max_lmrs", "MaxLMRBlockSize": "max_lmr_block_size", "MaxLMRVirtualAddress": "max_lmr_virtual_address",
		"MaxPZs": "max_pzs", "MaxMessageSize": "max_message_size", "MaxRDMASize": "max_rdma_size",
		"MaxRMRs": "max_rmrs", "MaxRMRTargetAddress": "max_rmr_target_address", "MaxSRQs": "max_srqs",
		"MaxEPPerSRQ": "max_ep_per_srq", "MaxRecvPerSRQ": "max_recv_per_srq",
		"MaxIOVSegmentsPerRDMARead": "max_iov_segments_per_rdma_read", "MaxIOVSegmentsPerRDMAWrite": "max_iov_segments_per_rdma_write",
		"MaxRDMAReadIn": "max_rdma_read_in", "MaxRDMAReadOut": "max_rdma_read_out",
		"MaxRDMAReadPerEPInGuaranteed": "max_rdma_read_per_ep_in_guaranteed", "MaxRDMAReadPerEPOutGuaranteed": "max_rdma_read_per_ep_out_guaranteed",
		"ZBSupported": "zb_supported", "TransportAttrs": "transport_attrs", "VendorAttrs": "vendor_attrs",

		"ProviderName": "provider_name", "ProviderVersionMajor": "provider_version_major", "ProviderVersionMinor": "provider_version_minor",
		"DAPLVersionMajor": "dapl_version_major", "DAPLVersionMinor": "dapl_version_minor",
		"LMRMemTypesSupported": "lmr_mem_types_supported", "IOVOwnershipOnReturn": "iov_ownership_on_return",
		"QOSSupported": "qos_supported", "CompletionFlagsSupported": "completion_flags_supported", "ThreadSafe": "thread_safe",
		"MaxPrivateDataSize": "max_private_data_size", "SupportsMultipath": "supports_multipath", "EPCreator": "ep_creator",
		"PZSupport": "pz_support", "OptimalBufferAlignment": "optimal_buffer_alignment", "SRQSupported": "srq_supported",
		"SRQWatermarksSupported": "srq_watermarks_supported", "SRQEPPZDifferenceSupported": "srq_ep_pz_difference_supported",
		"SRQInfoSupported": "srq_info_supported", "EPRecvInfoSupported": "ep_recv_info_supported",
		"LMRSyncRequired": "lmr_sync_required", "DTOAsyncReturnGuaranteed": "dto_async_return_guaranteed",
		"RDMAWriteForRDMAReadRequired":  "rdma_write_for_rdma_read_required",
		"RDMAReadLMRRMRContextExposure": "rdma_read_lmr_rmr_context_exposure", "RMRScopeSupported": "rmr_scope_supported",
		"SignalSafe": "signal_safe", "HASupported": "ha_supported", "ProviderSpecific": "provider_specific",
	}
	for _, v := range []any{api.IAAttr{}, api.ProviderAttr{}} {
		for _, f := range reflect.VisibleFields(reflect.TypeOf(v)) {
			if got := jsonKey(f.Name); got != want[f.Name] {
				t.Errorf("jsonKey(%q) = %q, want %q", f.Name, got, want[f.Name])
			}
		}
	}
	for name, key := range map[string]string{"XYZFoo": "xyz_foo", "Foo2Bar": "foo2_bar", "EPsilon": "e_psilon", "A": "a"} {
		if got := jsonKey(name); got != key {
			t.Errorf("jsonKey(%q) = %q, want %q", name, got, key)
		}
	}
}
