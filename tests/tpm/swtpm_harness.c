#include "tests/tpm/swtpm_harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <tss2/tss2_tctildr.h>

#include "tests/testutil.h"

bool swtpm_available(void)
{
	return system("command -v swtpm >/dev/null 2>&1 && "
		      "command -v swtpm_setup >/dev/null 2>&1 && "
		      "command -v swtpm_localca >/dev/null 2>&1") == 0;
}

void swtpm_require_or_skip(void)
{
	if (!swtpm_available()) {
		printf("SKIP: swtpm, swtpm_setup or swtpm_localca not on PATH "
		       "(apt-get install swtpm swtpm-tools)\n");
		exit(TEST_SKIP_EXIT);
	}
}

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

/* A port p such that p and p+1 are free on 127.0.0.1 right now. The race
 * with other processes is handled by retrying swtpm_start on failure. */
static int free_port_pair(void)
{
	for (int attempt = 0; attempt < 50; attempt++) {
		int s = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in a = {.sin_family = AF_INET};
		socklen_t alen = sizeof(a);
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (s < 0)
			return -1;
		if (bind(s, (struct sockaddr *)&a, sizeof(a)) < 0 ||
		    getsockname(s, (struct sockaddr *)&a, &alen) < 0) {
			close(s);
			continue;
		}
		int port = ntohs(a.sin_port);
		close(s);
		if (port >= 65535)
			continue;
		int s2 = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in b = a;
		b.sin_port = htons((uint16_t)(port + 1));
		int ok = s2 >= 0 && bind(s2, (struct sockaddr *)&b, sizeof(b)) == 0;
		if (s2 >= 0)
			close(s2);
		if (ok)
			return port;
	}
	return -1;
}

static int wait_listening(int port, pid_t pid)
{
	for (int i = 0; i < 200; i++) {
		int s = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		int ok = connect(s, (struct sockaddr *)&a, sizeof(a)) == 0;
		close(s);
		if (ok)
			return 0;
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid)
			return -1; /* swtpm exited: port taken, or bad state */
		struct timespec ts = {0, 25 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	return -1;
}

static int manufacture(struct swtpm *t, const struct swtpm_opts *opts)
{
	char path[512], text[2048], cmd[2048];
	snprintf(path, sizeof(path), "%s/state", t->dir);
	if (mkdir(path, 0700) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/ca", t->dir);
	if (mkdir(path, 0700) < 0)
		return -1;
	/* The private manufacturer CA: swtpm_localca creates its root and
	 * issuer on first use, in statedir. */
	snprintf(text, sizeof(text),
		 "statedir = %s/ca\nsigningkey = %s/ca/signkey.pem\n"
		 "issuercert = %s/ca/issuercert.pem\ncertserial = %s/ca/certserial\n",
		 t->dir, t->dir, t->dir, t->dir);
	snprintf(path, sizeof(path), "%s/localca.conf", t->dir);
	if (write_file(path, text) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/localca.options", t->dir);
	if (write_file(path, "--platform-manufacturer fleetd-test\n--platform-version 2.1\n"
			     "--platform-model swtpm\n") < 0)
		return -1;
	snprintf(text, sizeof(text),
		 "create_certs_tool = /usr/bin/swtpm_localca\n"
		 "create_certs_tool_config = %s/localca.conf\n"
		 "create_certs_tool_options = %s/localca.options\n"
		 "active_pcr_banks = %s\n",
		 t->dir, t->dir, opts && opts->pcr_banks ? opts->pcr_banks : "sha256");
	snprintf(path, sizeof(path), "%s/swtpm_setup.conf", t->dir);
	if (write_file(path, text) < 0)
		return -1;
	snprintf(cmd, sizeof(cmd),
		 "swtpm_setup --tpm2 --tpmstate %s/state --config %s/swtpm_setup.conf "
		 "--overwrite %s --pcr-banks %s >%s/setup.log 2>&1",
		 t->dir, t->dir,
		 opts && opts->no_ek_certs ? "" : "--create-ek-cert --lock-nvram",
		 opts && opts->pcr_banks ? opts->pcr_banks : "sha256", t->dir);
	if (system(cmd) != 0) {
		fprintf(stderr, "swtpm_setup failed; see %s/setup.log\n", t->dir);
		return -1;
	}
	if (!(opts && opts->no_ek_certs)) {
		snprintf(path, sizeof(path), "%s/roots", t->dir);
		if (mkdir(path, 0700) < 0)
			return -1;
		snprintf(cmd, sizeof(cmd),
			 "cp %s/ca/swtpm-localca-rootca-cert.pem %s/roots/root.pem && "
			 "cp %s/ca/issuercert.pem %s/roots/issuer.pem",
			 t->dir, t->dir, t->dir, t->dir);
		if (system(cmd) != 0)
			return -1;
		snprintf(t->roots, sizeof(t->roots), "%s/roots", t->dir);
	}
	return 0;
}

static pid_t spawn_swtpm(struct swtpm *t)
{
	char state[300], server[128], ctrl[128], log[320];
	snprintf(state, sizeof(state), "dir=%s/state", t->dir);
	snprintf(server, sizeof(server), "type=tcp,port=%d,bindaddr=127.0.0.1", t->port);
	snprintf(ctrl, sizeof(ctrl), "type=tcp,port=%d,bindaddr=127.0.0.1", t->port + 1);
	snprintf(log, sizeof(log), "%s/swtpm.log", t->dir);
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
		close(fd);
	}
	execlp("swtpm", "swtpm", "socket", "--tpm2", "--tpmstate", state, "--server", server,
	       "--ctrl", ctrl, "--flags", "not-need-init,startup-clear", (char *)NULL);
	_exit(127);
}

int swtpm_start(struct swtpm *t, const struct swtpm_opts *opts)
{
	memset(t, 0, sizeof(*t));
	char *d = make_temp_dir("swtpm");
	if (!d) {
		perror("mkdtemp");
		return -1;
	}
	snprintf(t->dir, sizeof(t->dir), "%s", d);
	free(d);
	if (manufacture(t, opts) < 0) {
		fprintf(stderr, "swtpm harness: manufacturing the TPM in %s failed\n", t->dir);
		return -1;
	}
	for (int attempt = 0; attempt < 5; attempt++) {
		t->port = free_port_pair();
		if (t->port < 0)
			break;
		t->pid = spawn_swtpm(t);
		if (t->pid < 0)
			break;
		if (wait_listening(t->port, t->pid) == 0) {
			snprintf(t->tcti, sizeof(t->tcti), "swtpm:host=127.0.0.1,port=%d", t->port);
			return 0;
		}
		kill(t->pid, SIGKILL);
		waitpid(t->pid, NULL, 0);
		t->pid = 0;
	}
	fprintf(stderr, "swtpm harness: swtpm did not start; see %s/swtpm.log\n", t->dir);
	return -1;
}

ESYS_CONTEXT *swtpm_esys(struct swtpm *t)
{
	if (t->esys)
		return t->esys;
	if (Tss2_TctiLdr_Initialize(t->tcti, &t->tcti_ctx) != TSS2_RC_SUCCESS) {
		fprintf(stderr, "swtpm harness: TCTI %s did not open\n", t->tcti);
		return NULL;
	}
	if (Esys_Initialize(&t->esys, t->tcti_ctx, NULL) != TSS2_RC_SUCCESS) {
		fprintf(stderr, "swtpm harness: Esys_Initialize failed\n");
		Tss2_TctiLdr_Finalize(&t->tcti_ctx);
		return NULL;
	}
	return t->esys;
}

static void close_contexts(struct swtpm *t)
{
	if (t->esys)
		Esys_Finalize(&t->esys);
	if (t->tcti_ctx)
		Tss2_TctiLdr_Finalize(&t->tcti_ctx);
}

void swtpm_kill(struct swtpm *t)
{
	if (t->pid > 0) {
		kill(t->pid, SIGKILL);
		waitpid(t->pid, NULL, 0);
		t->pid = 0;
	}
}

void swtpm_stop(struct swtpm *t)
{
	close_contexts(t);
	if (t->pid > 0) {
		kill(t->pid, SIGTERM);
		for (int i = 0; i < 100; i++) {
			if (waitpid(t->pid, NULL, WNOHANG) == t->pid) {
				t->pid = 0;
				break;
			}
			struct timespec ts = {0, 20 * 1000 * 1000};
			nanosleep(&ts, NULL);
		}
		swtpm_kill(t);
	}
	if (t->dir[0] && !getenv("FLEET_KEEP_SWTPM"))
		rm_rf(t->dir);
	t->dir[0] = '\0';
}

int swtpm_nv_read(struct swtpm *t, TPM2_HANDLE index, unsigned char **out, size_t *len)
{
	ESYS_CONTEXT *e = swtpm_esys(t);
	ESYS_TR nv = ESYS_TR_NONE;
	TPM2B_NV_PUBLIC *pub = NULL;
	TPM2B_NAME *name = NULL;
	if (!e || Esys_TR_FromTPMPublic(e, index, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &nv))
		return -1;
	if (Esys_NV_ReadPublic(e, nv, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &pub, &name)) {
		Esys_TR_Close(e, &nv);
		return -1;
	}
	size_t size = pub->nvPublic.dataSize;
	Esys_Free(pub);
	Esys_Free(name);
	unsigned char *buf = malloc(size ? size : 1);
	size_t off = 0;
	while (buf && off < size) {
		/* 1024 is below every TPM's MAX_NV_BUFFER_SIZE. */
		UINT16 chunk = (UINT16)(size - off > 1024 ? 1024 : size - off);
		TPM2B_MAX_NV_BUFFER *data = NULL;
		if (Esys_NV_Read(e, nv, nv, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, chunk,
				 (UINT16)off, &data)) {
			free(buf);
			buf = NULL;
			break;
		}
		memcpy(buf + off, data->buffer, data->size);
		off += data->size;
		Esys_Free(data);
	}
	Esys_TR_Close(e, &nv);
	if (!buf)
		return -1;
	*out = buf;
	*len = size;
	return 0;
}

int swtpm_read_public(struct swtpm *t, TPM2_HANDLE handle, TPM2B_PUBLIC **out)
{
	ESYS_CONTEXT *e = swtpm_esys(t);
	ESYS_TR obj = ESYS_TR_NONE;
	TPM2B_NAME *name = NULL, *qname = NULL;
	if (!e || Esys_TR_FromTPMPublic(e, handle, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &obj))
		return -1;
	TSS2_RC rc = Esys_ReadPublic(e, obj, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, out, &name,
				     &qname);
	Esys_Free(name);
	Esys_Free(qname);
	Esys_TR_Close(e, &obj);
	return rc == TSS2_RC_SUCCESS ? 0 : -1;
}
