/* glslc as a vulkan leg's build runs it: one call handed to the leg's glslc cache server.
 *
 * Written into the build folder by the pipeline (pipeline/ccache/glslc_client.py compiles it with the
 * leg's C compiler). It finds, beside itself, the server's socket (server.sock) and the Python launcher
 * (glslc-py), sends the server its arguments, its folder and its environment
 * (pipeline/ccache/glslc_server.py says how), and does what the reply says: write glslc's output and
 * exit with its code, or run glslc itself, or run the Python launcher. No server, a server that goes
 * away mid-call, or a reply it cannot read: the Python launcher takes the call (the same cache, one
 * interpreter per call), so the build never depends on the server.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#define PROTOCOL "glslc-cache-request-1"
#define SOCKET_NAME "server.sock"
#define FALLBACK_NAME "glslc-py"
#define PROBE_VARIABLE "PIPELINE_GLSLC_CLIENT_PROBE"

#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0
#endif

extern char **environ;

struct buffer {
    char *data;
    size_t len, cap;
};

static int append(struct buffer *b, const char *data, size_t len) {
    if (b->len + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 8192;
        while (cap < b->len + len + 1) cap *= 2;
        char *grown = realloc(b->data, cap);
        if (!grown) return -1;
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
    return 0;
}

static int append_field(struct buffer *b, const char *text) {
    return append(b, text, strlen(text) + 1); /* with its NUL */
}

static int append_count(struct buffer *b, long count) {
    char text[32];
    snprintf(text, sizeof text, "%ld", count);
    return append_field(b, text);
}

/* The folder this program is in: where its socket and its fallback are. */
static char self_dir[PATH_MAX];

static int find_self_dir(const char *argv0) {
    ssize_t n = readlink("/proc/self/exe", self_dir, sizeof self_dir - 1);
    if (n <= 0) {
        if (!argv0 || !strchr(argv0, '/') || strlen(argv0) >= sizeof self_dir) return -1;
        n = (ssize_t)strlen(argv0);
        memcpy(self_dir, argv0, (size_t)n);
    }
    self_dir[n] = '\0';
    char *slash = strrchr(self_dir, '/');
    if (!slash) return -1;
    if (slash == self_dir) slash[1] = '\0'; else *slash = '\0';
    return 0;
}

static int run_as(const char *program, char **argv) {
    argv[0] = (char *)program;
    execv(program, argv);
    fprintf(stderr, "glslc (pipeline launcher): cannot run %s: %s\n", program, strerror(errno));
    return 127;
}

static int fallback(char **argv) {
    static char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", self_dir, FALLBACK_NAME) >= (int)sizeof path) {
        fprintf(stderr, "glslc (pipeline launcher): path too long: %s\n", self_dir);
        return 127;
    }
    return run_as(path, argv);
}

static int write_all(int fd, const char *data, size_t len) {
    while (len) {
        ssize_t n = write(fd, data, len);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

/* A connected socket to the server beside this program, or -1. */
static int connect_server(void) {
    struct sockaddr_un addr;
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    fcntl(fd, F_SETFD, FD_CLOEXEC);
#ifdef SO_NOSIGPIPE
    /* Where send() has no MSG_NOSIGNAL (macOS): a server that hangs up is an error to fall back from, not a
       signal that kills the call. */
    int on = 1;
    setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &on, sizeof on);
#endif
    int connected;
    if (strlen(self_dir) + 1 + strlen(SOCKET_NAME) < sizeof addr.sun_path) {
        snprintf(addr.sun_path, sizeof addr.sun_path, "%s/%s", self_dir, SOCKET_NAME);
        connected = connect(fd, (struct sockaddr *)&addr, sizeof addr);
    } else {
        /* A path longer than a socket address holds: connect by name from inside its folder. */
        int here = open(".", O_RDONLY);
        if (here < 0 || chdir(self_dir) != 0) {
            if (here >= 0) close(here);
            close(fd);
            return -1;
        }
        strcpy(addr.sun_path, SOCKET_NAME);
        connected = connect(fd, (struct sockaddr *)&addr, sizeof addr);
        if (fchdir(here) != 0) {
            fprintf(stderr, "glslc (pipeline launcher): cannot return to the build's folder: %s\n", strerror(errno));
            exit(127);
        }
        close(here);
    }
    if (connected != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Parses a decimal count at *p followed by `end`; -1 when there is none. */
static long read_count(const char **p, const char *limit, char end) {
    long value = 0;
    int digits = 0;
    const char *s = *p;
    if (s < limit && *s == '-') return -1;
    while (s < limit && *s >= '0' && *s <= '9' && digits < 12) {
        value = value * 10 + (*s - '0');
        s++;
        digits++;
    }
    if (!digits || s >= limit || *s != end) return -1;
    *p = s + 1;
    return value;
}

int main(int argc, char **argv) {
    if (getenv(PROBE_VARIABLE)) {
        puts(PROTOCOL);
        return 0;
    }
    if (find_self_dir(argv[0]) != 0) {
        fprintf(stderr, "glslc (pipeline launcher): cannot tell which folder it is in\n");
        return 127;
    }
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) return fallback(argv);
    struct buffer request = {0};
    long envc = 0;
    for (char **e = environ; *e; e++) envc++;
    int ok = append_field(&request, PROTOCOL) == 0 && append_field(&request, cwd) == 0 &&
             append_count(&request, argc - 1) == 0;
    for (int i = 1; ok && i < argc; i++) ok = append_field(&request, argv[i]) == 0;
    ok = ok && append_count(&request, envc) == 0;
    for (char **e = environ; ok && *e; e++) ok = append_field(&request, *e) == 0;
    if (!ok) return fallback(argv);

    int fd = connect_server();
    if (fd < 0) return fallback(argv);
    for (size_t sent = 0; sent < request.len;) {
        ssize_t n = send(fd, request.data + sent, request.len - sent, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            close(fd);
            return fallback(argv);
        }
        sent += (size_t)n;
    }
    shutdown(fd, SHUT_WR);
    struct buffer reply = {0};
    char chunk[65536];
    for (;;) {
        ssize_t n = recv(fd, chunk, sizeof chunk, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            close(fd);
            return fallback(argv);
        }
        if (n == 0) break;
        if (append(&reply, chunk, (size_t)n) != 0) {
            close(fd);
            return fallback(argv);
        }
    }
    close(fd);
    const char *p = reply.data, *limit = reply.data + reply.len;
    if (reply.len > 2 && p[0] == 'X' && p[1] == ' ') return run_as(p + 2, argv);
    if (reply.len > 2 && p[0] == 'R' && p[1] == ' ') {
        p += 2;
        long code = read_count(&p, limit, ' ');
        long out = code < 0 ? -1 : read_count(&p, limit, ' ');
        long err = out < 0 ? -1 : read_count(&p, limit, '\n');
        if (err >= 0 && (size_t)(limit - p) == (size_t)out + (size_t)err && code < 256) {
            if (write_all(1, p, (size_t)out) != 0 || write_all(2, p + out, (size_t)err) != 0) return 1;
            return (int)code;
        }
    }
    /* F, a reply cut short (the server went away) or one this client does not know. */
    return fallback(argv);
}
