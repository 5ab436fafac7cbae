/* attrs.c prints, one "name value" line each, the fields of the IA,
 * provider and default EP attributes that dat_ia_query and dat_ep_query
 * return for the IA named by argv[1]; cabi_test.go compares them with what
 * godat's Go API reports for the same IA. */
#include <stdio.h>
#include <stdlib.h>
#include <dat2/udat.h>

#define OK(call)                                                            \
	do {                                                                    \
		DAT_RETURN r_ = (call);                                             \
		if (r_ != DAT_SUCCESS) {                                            \
			fprintf(stderr, "%s: 0x%x\n", #call, (unsigned)r_);             \
			exit(1);                                                        \
		}                                                                   \
	} while (0)

#define N(s, f) printf(#f " %llu\n", (unsigned long long)(s).f)
#define S(s, f) printf(#f " %s\n", (s).f)
#define E(f) printf("ep." #f " %llu\n", (unsigned long long)e.ep_attr.f)

int main(int argc, char **argv)
{
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async = DAT_HANDLE_NULL, evd;
	DAT_PZ_HANDLE pz;
	DAT_EP_HANDLE ep;
	DAT_IA_ATTR a;
	DAT_PROVIDER_ATTR p;
	DAT_EP_PARAM e;

	if (argc < 2) {
		fprintf(stderr, "usage: attrs IA\n");
		return 2;
	}
	OK(dat_ia_open(argv[1], 8, &async, &ia));
	OK(dat_ia_query(ia, NULL, DAT_IA_FIELD_ALL, &a, DAT_PROVIDER_FIELD_ALL, &p));
	S(a, adapter_name);
	S(a, vendor_name);
	N(a, hardware_version_major);
	N(a, hardware_version_minor);
	N(a, firmware_version_major);
	N(a, firmware_version_minor);
	N(a, max_eps);
	N(a, max_dto_per_ep);
	N(a, max_rdma_read_per_ep_in);
	N(a, max_rdma_read_per_ep_out);
	N(a, max_evds);
	N(a, max_evd_qlen);
	N(a, max_iov_segments_per_dto);
	N(a, max_lmrs);
	N(a, max_lmr_block_size);
	N(a, max_lmr_virtual_address);
	N(a, max_pzs);
	N(a, max_message_size);
	N(a, max_rdma_size);
	N(a, max_rmrs);
	N(a, max_rmr_target_address);
	N(a, max_srqs);
	N(a, max_ep_per_srq);
	N(a, max_recv_per_srq);
	N(a, max_iov_segments_per_rdma_read);
	N(a, max_iov_segments_per_rdma_write);
	N(a, max_rdma_read_in);
	N(a, max_rdma_read_out);
	N(a, max_rdma_read_per_ep_in_guaranteed);
	N(a, max_rdma_read_per_ep_out_guaranteed);
	N(a, zb_supported);
	S(p, provider_name);
	N(p, provider_version_major);
	N(p, provider_version_minor);
	N(p, dapl_version_major);
	N(p, dapl_version_minor);
	N(p, lmr_mem_types_supported);
	N(p, iov_ownership_on_return);
	N(p, dat_qos_supported);
	N(p, completion_flags_supported);
	N(p, is_thread_safe);
	N(p, max_private_data_size);
	N(p, supports_multipath);
	N(p, ep_creator);
	N(p, pz_support);
	N(p, optimal_buffer_alignment);
	N(p, srq_supported);
	N(p, srq_watermarks_supported);
	N(p, srq_ep_pz_difference_supported);
	N(p, srq_info_supported);
	N(p, ep_recv_info_supported);
	N(p, lmr_sync_req);
	N(p, dto_async_return_guaranteed);
	N(p, rdma_write_for_rdma_read_req);
	N(p, rdma_read_lmr_rmr_context_exposure);
	N(p, rmr_scope_supported);
	N(p, is_signal_safe);
	N(p, ha_supported);

	OK(dat_pz_create(ia, &pz));
	OK(dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG | DAT_EVD_CONNECTION_FLAG, &evd));
	OK(dat_ep_create(ia, pz, evd, evd, evd, NULL, &ep));
	OK(dat_ep_query(ep, DAT_EP_FIELD_ALL, &e));
	E(service_type);
	E(max_message_size);
	E(max_rdma_size);
	E(qos);
	E(recv_completion_flags);
	E(request_completion_flags);
	E(max_recv_dtos);
	E(max_request_dtos);
	E(max_recv_iov);
	E(max_request_iov);
	E(max_rdma_read_in);
	E(max_rdma_read_out);
	E(srq_soft_hw);
	E(max_rdma_read_iov);
	E(max_rdma_write_iov);

	OK(dat_ep_free(ep));
	OK(dat_evd_free(evd));
	OK(dat_pz_free(pz));
	OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
	return 0;
}
