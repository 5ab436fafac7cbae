/* Shared declarations of godat's C ABI (package cabi): the handle layout
 * and the provider table. See doc.go. */
#ifndef GODAT_CABI_H
#define GODAT_CABI_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <dat2/udat.h>
#include <dat2/dat_registry.h>

/* Every handle godat gives a C program points at one of these slots. Its
 * first word is the provider table, as DAT_HANDLE_TO_PROVIDER in
 * dat_redirection.h expects, so OFA's libdat2 can dispatch through it. */
typedef struct gd_slot {
	const DAT_PROVIDER *provider;
	uint32_t kind; /* DAT_HANDLE_TYPE, or ~0 while free */
	uint32_t spare;
} gd_slot;

extern DAT_PROVIDER gd_provider;

/* The provider table of the IA called name (shim.c). */
const DAT_PROVIDER *gd_provider_for(const char *name);

/* Calls a consumer's wait proxy agent (dat_cno_create(3DAT)). */
void gd_call_agent(DAT_AGENT_FUNC fn, DAT_PVOID instance, DAT_EVD_HANDLE evd);

/* A DAT_RETURN of the error class. */
#define GD_ERROR(type, sub) ((DAT_RETURN)(DAT_CLASS_ERROR | (type) | (sub)))

#endif
