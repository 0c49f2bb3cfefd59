/*
 * bind_shim.c: LD_PRELOAD into a client (tink-attest) so that its
 * connections to fleetd leave from a loopback address of the test's
 * choosing: each simulated machine then is its own source to fleetd's
 * per-source rate limits and session caps, as machines on a real network
 * are. Nothing of the client knows.
 *
 *   LOAD_BIND_ADDR  the IPv4 address to bind before connecting (127.0.x.y)
 *   LOAD_BIND_PORT  only connections to this TCP port are bound (fleetd's;
 *                   the TPM's socket stays as it was)
 *
 * Without both set, connect() is passed through untouched.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

typedef int (*connect_fn)(int, const struct sockaddr *, socklen_t);

int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	static connect_fn real;
	if (!real)
		real = (connect_fn)dlsym(RTLD_NEXT, "connect");
	const char *a = getenv("LOAD_BIND_ADDR"), *p = getenv("LOAD_BIND_PORT");
	if (a && p && addr && addr->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *to = (const struct sockaddr_in *)addr;
		if (ntohs(to->sin_port) == (unsigned)atoi(p)) {
			struct sockaddr_in from;
			memset(&from, 0, sizeof(from));
			from.sin_family = AF_INET;
			if (inet_pton(AF_INET, a, &from.sin_addr) == 1) {
				int saved = errno;
				/* an already bound socket (EINVAL) is left as it is */
				(void)bind(fd, (struct sockaddr *)&from, sizeof(from));
				errno = saved;
			}
		}
	}
	return real(fd, addr, len);
}
