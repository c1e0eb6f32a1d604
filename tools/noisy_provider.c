// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * A DAT provider library that only talks, for datinfo_test: when the registry loads it (the first
 * dat_ia_open of an IA naming it) it writes to standard output and standard error, as OFED's
 * libdaplofa writes "open_hca: getaddr_netdev ERROR" to standard output, and registers nothing,
 * so the open fails with DAT_PROVIDER_NOT_FOUND. datinfo must keep both writes out of its report.
 */
#include <dat2/udat.h>
#include <stdio.h>

void dat_provider_init(const DAT_PROVIDER_INFO *info, const char *ia_params)
{
    printf("noisy provider on stdout: %s \"%s\" {\"not\": json\n", info->ia_name, ia_params);
    fprintf(stderr, "noisy provider on stderr: %s\n", info->ia_name);
}

void dat_provider_fini(const DAT_PROVIDER_INFO *info)
{
    printf("noisy provider fini on stdout: %s\n", info->ia_name);
}
