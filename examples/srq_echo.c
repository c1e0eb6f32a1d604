// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * srq_echo: a DAT 2.0 consumer whose server endpoints share one Shared Receive Queue (SRQ).
 *
 * Written against <dat2/udat.h> and the stock registry (libdat2) only: it runs over any DAT
 * provider that offers SRQs, softdat among them. docs/EXAMPLE.md walks through it.
 *
 *   srq_echo server [-P IA] [-p PORT] [-c CONNECTIONS] [-w WINDOW] [-s SIZE]
 *   srq_echo client HOST [-P IA] [-p PORT] [-c CONNECTIONS] [-w WINDOW] [-s SIZE] [-n MESSAGES]
 *
 * The client opens CONNECTIONS connections to the server and sends MESSAGES messages of SIZE
 * bytes on each, never more than WINDOW at a time on one connection; the server sends each
 * message back on the connection it came from, and the client checks every byte.
 *
 * The server's endpoints post no receives of their own: every receive buffer sits on one SRQ,
 * sized from the messages that can be in flight (CONNECTIONS x WINDOW). The server does not
 * repost a buffer the moment it is free: it lets free buffers gather and puts them all back
 * when the SRQ's low watermark event says the SRQ is running low, which is what the watermark
 * is for. At each such event it asks every endpoint, with dat_ep_recv_query, how many SRQ
 * buffers it holds and the span of messages those buffers cover.
 *
 * Both sides must be given the same -c, -w and -s. A server rejects a connection beyond its -c
 * and says so; the rejection carries its -c, so the client says what to change. Exit status 0
 * when every message came back intact; 1, with a line on stderr saying what failed, otherwise;
 * 2 for a usage error.
 */
#define _POSIX_C_SOURCE 200809L /* getaddrinfo under -std=c11 */

#include <dat2/udat.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------ options and errors */

struct options {
    int server;                /* 1: serve; 0: client */
    const char *host;          /* client: the server's address or name */
    char *ia_name;             /* -P: an IA name from dat.conf */
    unsigned port;             /* -p: the connection qualifier the server listens on */
    int connections;           /* -c */
    int window;                /* -w: messages in flight per connection */
    int size;                  /* -s: bytes per message */
    int messages;              /* -n: messages per connection (client) */
};

/* Prints "srq_echo: WHAT: MAJOR MINOR" for a failed DAT call and exits 1. */
static void die(const char *what, DAT_RETURN status)
{
    const char *major = "", *minor = "";
    dat_strerror(status, &major, &minor);
    fprintf(stderr, "srq_echo: %s: %s %s\n", what, major, minor);
    exit(1);
}

static void check(DAT_RETURN status, const char *what)
{
    if (status != DAT_SUCCESS)
        die(what, status);
}

static void fail(const char *why)
{
    fprintf(stderr, "srq_echo: %s\n", why);
    exit(1);
}

static int parse_options(int argc, char **argv, struct options *o)
{
    int i = 2;
    o->ia_name = "softdat-tcp";
    o->port = 17001;
    o->connections = 4;
    o->window = 8;
    o->size = 256;
    o->messages = 1000;
    if (argc < 2)
        return 0;
    if (strcmp(argv[1], "server") == 0) {
        o->server = 1;
    } else if (strcmp(argv[1], "client") == 0 && argc >= 3) {
        o->host = argv[2];
        i = 3;
    } else {
        return 0;
    }
    for (; i + 1 < argc; i += 2) {
        int value = atoi(argv[i + 1]);
        if (strcmp(argv[i], "-P") == 0) o->ia_name = argv[i + 1];
        else if (strcmp(argv[i], "-p") == 0 && value > 0 && value < 65536) o->port = (unsigned)value;
        else if (strcmp(argv[i], "-c") == 0 && value > 0 && value <= 100) o->connections = value;
        else if (strcmp(argv[i], "-w") == 0 && value > 0 && value <= 256) o->window = value;
        else if (strcmp(argv[i], "-s") == 0 && value >= 8 && value <= (1 << 20)) o->size = value;
        else if (strcmp(argv[i], "-n") == 0 && value > 0) o->messages = value;
        else return 0;
    }
    return i == argc;
}

/* ------------------------------------------------------------------ what both sides share */

/* An IA with one protection zone and the event dispatchers (EVDs) both sides use. One EVD
 * takes every data transfer completion (receives and sends of every endpoint), one the
 * connection events; the server has a third for connection requests. Keeping event streams
 * on separate EVDs works on every provider (merging them is an optional provider feature). */
struct ia {
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE async_evd;  /* made by dat_ia_open: SRQ low watermark, broken EPs */
    DAT_PZ_HANDLE pz;
    DAT_EVD_HANDLE dto_evd;
    DAT_EVD_HANDLE conn_evd;
    DAT_EVD_HANDLE cr_evd;
};

static void open_ia(const struct options *o, struct ia *ia, int dto_qlen)
{
    ia->async_evd = DAT_HANDLE_NULL; /* DAT_HANDLE_NULL: let dat_ia_open create it */
    check(dat_ia_open(o->ia_name, 64, &ia->async_evd, &ia->ia), "dat_ia_open");
    check(dat_pz_create(ia->ia, &ia->pz), "dat_pz_create");
    check(dat_evd_create(ia->ia, dto_qlen, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &ia->dto_evd),
          "dat_evd_create(DTO)");
    check(dat_evd_create(ia->ia, 2 * o->connections + 4, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG,
                         &ia->conn_evd), "dat_evd_create(connection)");
    ia->cr_evd = DAT_HANDLE_NULL;
    if (o->server)
        check(dat_evd_create(ia->ia, o->connections + 4, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &ia->cr_evd),
              "dat_evd_create(CR)");
}

/* One registered region carved into `count` buffers of `size` bytes. */
struct buffers {
    char *memory;
    int count, size;
    DAT_LMR_HANDLE lmr;
    DAT_LMR_CONTEXT lmr_context;
};

static void register_buffers(struct ia *ia, struct buffers *b, int count, int size)
{
    DAT_REGION_DESCRIPTION region;
    DAT_RMR_CONTEXT rmr_context;
    DAT_VLEN registered_length;
    DAT_VADDR registered_address;
    b->count = count;
    b->size = size;
    b->memory = calloc((size_t)count, (size_t)size);
    if (b->memory == NULL)
        fail("out of memory");
    region.for_va = b->memory;
    check(dat_lmr_create(ia->ia, DAT_MEM_TYPE_VIRTUAL, region, (DAT_VLEN)count * (DAT_VLEN)size, ia->pz,
                         DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_LOCAL_WRITE_FLAG, DAT_VA_TYPE_VA, &b->lmr,
                         &b->lmr_context, &rmr_context, &registered_length, &registered_address),
          "dat_lmr_create");
}

/* The iov of buffer `index`, `length` bytes long. */
static DAT_LMR_TRIPLET segment(const struct buffers *b, int index, int length)
{
    DAT_LMR_TRIPLET iov;
    iov.virtual_address = (DAT_VADDR)(uintptr_t)(b->memory + (size_t)index * (size_t)b->size);
    iov.segment_length = (DAT_SEG_LENGTH)length;
    iov.lmr_context = b->lmr_context;
    return iov;
}

/* A cookie names the buffer; the top bit tells a send's completion from a receive's. */
#define SEND_BIT (UINT64_C(1) << 63)

static DAT_DTO_COOKIE cookie(uint64_t value)
{
    DAT_DTO_COOKIE c;
    c.as_64 = value;
    return c;
}

/* Waits up to `timeout_us` for one event on `evd`; returns 1 with it, 0 on timeout. */
static int next_event(DAT_EVD_HANDLE evd, DAT_TIMEOUT timeout_us, DAT_EVENT *event)
{
    DAT_COUNT more;
    DAT_RETURN status = dat_evd_wait(evd, timeout_us, 1, event, &more);
    if (DAT_GET_TYPE(status) == DAT_TIMEOUT_EXPIRED)
        return 0;
    check(status, "dat_evd_wait");
    return 1;
}

/* Takes one event off `evd` if it has any, without waiting. */
static int poll_event(DAT_EVD_HANDLE evd, DAT_EVENT *event)
{
    DAT_RETURN status = dat_evd_dequeue(evd, event);
    if (DAT_GET_TYPE(status) == DAT_QUEUE_EMPTY)
        return 0;
    check(status, "dat_evd_dequeue");
    return 1;
}

/* The private data a server's rejection carries when it already serves all its connections:
 * this text, then its -c. A client that finds it says what to change. */
#define FULL_TEXT "srq_echo: full "

/* Why a connection did not come up, in the words of the DAT event. */
static const char *connection_event_name(DAT_EVENT_NUMBER number)
{
    switch (number) {
    case DAT_CONNECTION_EVENT_PEER_REJECTED: return "rejected by the server (DAT_CONNECTION_EVENT_PEER_REJECTED)";
    case DAT_CONNECTION_EVENT_NON_PEER_REJECTED: return "refused (DAT_CONNECTION_EVENT_NON_PEER_REJECTED)";
    case DAT_CONNECTION_EVENT_UNREACHABLE: return "no server there (DAT_CONNECTION_EVENT_UNREACHABLE)";
    case DAT_CONNECTION_EVENT_TIMED_OUT: return "timed out (DAT_CONNECTION_EVENT_TIMED_OUT)";
    default: return "not established";
    }
}

/* An asynchronous event's DAT name, for the line that says one was ignored. */
static const char *async_event_name(DAT_EVENT_NUMBER number)
{
    switch (number) {
    case DAT_ASYNC_ERROR_EVD_OVERFLOW: return "DAT_ASYNC_ERROR_EVD_OVERFLOW";
    case DAT_ASYNC_ERROR_IA_CATASTROPHIC: return "DAT_ASYNC_ERROR_IA_CATASTROPHIC";
    case DAT_ASYNC_ERROR_EP_BROKEN: return "DAT_ASYNC_ERROR_EP_BROKEN";
    case DAT_ASYNC_ERROR_TIMED_OUT: return "DAT_ASYNC_ERROR_TIMED_OUT";
    case DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR: return "DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR";
    default: return "an event DAT does not name";
    }
}

static void check_completion(const DAT_EVENT *event)
{
    if (event->event_number != DAT_DTO_COMPLETION_EVENT)
        fail("unexpected event on the DTO EVD");
    if (event->event_data.dto_completion_event_data.status != DAT_DTO_SUCCESS)
        fail("a send or receive completed in error");
}

/* ------------------------------------------------------------------ the server */

struct server {
    struct options o;
    struct ia ia;
    DAT_SRQ_HANDLE srq;
    int srq_size, low_watermark;
    struct buffers buffers;
    int *free_list, free_count;   /* buffers echoed and ready to go back on the SRQ */
    int refill_waiting;           /* the watermark fired with nothing free to post */
    DAT_EP_HANDLE *eps;
    int ep_count, disconnected, rejected;
    long echoed, low_watermark_events;
};

/* Puts every free buffer back on the SRQ, then arms the low watermark again: it fires once per
 * setting (dat_srq_set_lw), and at once if the SRQ already holds fewer buffers than the mark. */
static void refill(struct server *s)
{
    while (s->free_count > 0) {
        int index = s->free_list[--s->free_count];
        DAT_LMR_TRIPLET iov = segment(&s->buffers, index, s->buffers.size);
        check(dat_srq_post_recv(s->srq, 1, &iov, cookie((uint64_t)index)), "dat_srq_post_recv");
    }
    s->refill_waiting = 0;
    check(dat_srq_set_lw(s->srq, s->low_watermark), "dat_srq_set_lw");
}

/* How the SRQ's buffers are spread over the endpoints right now, in one line however many there
 * are. nbufs_allocated: buffers an EP took from the SRQ that have not completed yet;
 * bufs_alloc_span: how many more receive completions the EP can generate from the messages it is
 * receiving (more than the count when messages arrived out of order). A provider that cannot
 * tell says DAT_VALUE_UNKNOWN (or does not implement dat_ep_recv_query). */
static void report_span(const struct server *s)
{
    int i, known = 0, holding = 0;
    long held = 0;
    DAT_COUNT most = 0, widest = 0;
    for (i = 0; i < s->ep_count; ++i) {
        DAT_COUNT allocated = 0, span = 0;
        DAT_RETURN status = dat_ep_recv_query(s->eps[i], &allocated, &span);
        if (DAT_GET_TYPE(status) == DAT_MODEL_NOT_SUPPORTED || allocated == DAT_VALUE_UNKNOWN)
            continue;
        check(status, "dat_ep_recv_query");
        ++known;
        holding += allocated > 0;
        held += allocated;
        if (allocated > most)
            most = allocated;
        if (span > widest)
            widest = span;
    }
    if (known == 0) {
        printf("  low watermark %ld: the provider does not tell which EP holds SRQ buffers\n", s->low_watermark_events);
        return;
    }
    printf("  low watermark %ld: %ld SRQ buffers held by %d of %d EPs, at most %d by one; widest span %d\n",
           s->low_watermark_events, held, holding, known, (int)most, (int)widest);
}

static void on_async_event(struct server *s, const DAT_EVENT *event)
{
    const DAT_ASYNCH_ERROR_EVENT_DATA *data = &event->event_data.asynch_error_event_data;
    /* DAT names the reason but no event number for the low watermark: know it by its SRQ and
     * reason, whatever number the provider delivers it under. */
    if (data->dat_handle == (DAT_HANDLE)s->srq && data->reason == DAT_SRQ_LOW_WATERMARK_EVENT) {
        ++s->low_watermark_events;
        if (s->low_watermark_events <= 5 || s->low_watermark_events % 100 == 0)
            report_span(s); /* the first few, then every 100th: a log, not a flood */
        if (s->free_count > 0)
            refill(s);
        else
            s->refill_waiting = 1; /* the next buffer an echo frees goes back at once */
        return;
    }
    /* An EP that used the SRQ reports DAT_ASYNC_ERROR_EP_BROKEN once its connection has gone
     * and its buffers are flushed: expected at the end, nothing to do. */
    if (event->event_number != DAT_ASYNC_ERROR_EP_BROKEN)
        fprintf(stderr, "srq_echo: asynchronous event %s (0x%x) ignored\n", async_event_name(event->event_number),
                (unsigned)event->event_number);
}

/* A connection request: a new endpoint that takes its receives from the SRQ, then accept. */
static void on_connection_request(struct server *s, const DAT_EVENT *event)
{
    DAT_CR_HANDLE cr = event->event_data.cr_arrival_event_data.cr_handle;
    DAT_EP_HANDLE ep;
    if (s->ep_count == s->o.connections) {
        /* Full: say so here, and tell the client how many this server takes. */
        char why[64];
        int length = snprintf(why, sizeof why, FULL_TEXT "%d", s->o.connections) + 1;
        ++s->rejected;
        fprintf(stderr, "srq_echo server: connection request %d rejected: this server takes %d connections (-c %d); "
                        "give the client the same -c\n", s->ep_count + s->rejected, s->o.connections, s->o.connections);
        check(dat_cr_reject(cr, length, why), "dat_cr_reject");
        return;
    }
    /* NULL attributes: the provider's defaults (the receive side comes from the SRQ). */
    check(dat_ep_create_with_srq(s->ia.ia, s->ia.pz, s->ia.dto_evd, s->ia.dto_evd, s->ia.conn_evd, s->srq, NULL,
                                 &ep), "dat_ep_create_with_srq");
    check(dat_cr_accept(cr, ep, 0, NULL), "dat_cr_accept");
    s->eps[s->ep_count++] = ep;
}

static void on_completion(struct server *s, const DAT_EVENT *event)
{
    const DAT_DTO_COMPLETION_EVENT_DATA *dto = &event->event_data.dto_completion_event_data;
    check_completion(event);
    if (dto->user_cookie.as_64 & SEND_BIT) {
        /* An echo went out: its buffer is free. */
        s->free_list[s->free_count++] = (int)(dto->user_cookie.as_64 & ~SEND_BIT);
        if (s->refill_waiting)
            refill(s);
        return;
    }
    /* A message arrived in an SRQ buffer; the event names the EP it came to. Send it back from
     * the same buffer. */
    {
        int index = (int)dto->user_cookie.as_64;
        DAT_LMR_TRIPLET iov = segment(&s->buffers, index, (int)dto->transfered_length);
        check(dat_ep_post_send(dto->ep_handle, 1, &iov, cookie(SEND_BIT | (uint64_t)index),
                               DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_send");
        ++s->echoed;
    }
}

static int run_server(const struct options *o)
{
    struct server s;
    DAT_SRQ_ATTR srq_attr;
    DAT_PSP_HANDLE psp;
    DAT_EVENT event;
    int i, in_flight = o->connections * o->window;
    memset(&s, 0, sizeof s);
    s.o = *o;
    /* Sizing. At most CONNECTIONS x WINDOW messages are in flight towards us; a buffer is busy
     * from its message's arrival until its echo completes. Twice the in-flight count lets the
     * SRQ keep a full window's worth posted while the other half is being echoed, and the low
     * watermark at the in-flight count asks for a refill while the SRQ can still take every
     * message the clients may send before we react. */
    s.srq_size = 2 * in_flight;
    s.low_watermark = in_flight;
    open_ia(o, &s.ia, 2 * s.srq_size + 8);
    register_buffers(&s.ia, &s.buffers, s.srq_size, o->size);
    s.free_list = calloc((size_t)s.srq_size, sizeof *s.free_list);
    s.eps = calloc((size_t)o->connections, sizeof *s.eps);
    if (s.free_list == NULL || s.eps == NULL)
        fail("out of memory");

    srq_attr.max_recv_dtos = s.srq_size;
    srq_attr.max_recv_iov = 1;
    srq_attr.low_watermark = DAT_SRQ_LW_DEFAULT; /* armed below, once the buffers are posted */
    check(dat_srq_create(s.ia.ia, s.ia.pz, &srq_attr, &s.srq), "dat_srq_create");
    for (i = 0; i < s.srq_size; ++i)
        s.free_list[s.free_count++] = i;
    refill(&s);

    check(dat_psp_create(s.ia.ia, o->port, s.ia.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp), "dat_psp_create");
    printf("srq_echo server: IA %s, port %u, SRQ of %d buffers of %d bytes, low watermark %d\n", o->ia_name,
           o->port, s.srq_size, o->size, s.low_watermark);
    fflush(stdout);

    /* One loop: connection requests, connection events and async events are polled; the
     * completions are waited for (10 ms at a time, so the others are never left long). */
    while (s.disconnected < o->connections) {
        while (poll_event(s.ia.cr_evd, &event))
            on_connection_request(&s, &event);
        while (poll_event(s.ia.conn_evd, &event)) {
            if (event.event_number == DAT_CONNECTION_EVENT_DISCONNECTED ||
                event.event_number == DAT_CONNECTION_EVENT_BROKEN)
                ++s.disconnected;
            else if (event.event_number != DAT_CONNECTION_EVENT_ESTABLISHED)
                fail("a connection failed");
        }
        while (poll_event(s.ia.async_evd, &event))
            on_async_event(&s, &event);
        if (next_event(s.ia.dto_evd, 10000, &event)) {
            int n = 0;
            do
                on_completion(&s, &event);
            while (++n < 64 && poll_event(s.ia.dto_evd, &event));
        }
    }
    printf("srq_echo server: %ld messages echoed over %d connections; low watermark reached %ld times\n",
           s.echoed, s.ep_count, s.low_watermark_events);
    if (s.rejected > 0)
        fprintf(stderr, "srq_echo server: %d connection request%s rejected: the client asked for more connections than "
                        "the %d this server takes (-c)\n", s.rejected, s.rejected == 1 ? " was" : "s were",
                o->connections);

    for (i = 0; i < s.ep_count; ++i)
        check(dat_ep_free(s.eps[i]), "dat_ep_free");
    check(dat_psp_free(psp), "dat_psp_free");
    check(dat_srq_free(s.srq), "dat_srq_free");
    check(dat_ia_close(s.ia.ia, DAT_CLOSE_ABRUPT_FLAG), "dat_ia_close");
    return s.rejected > 0 ? 1 : 0;
}

/* ------------------------------------------------------------------ the client */

/* Message `seq` of connection `conn`: the two numbers, then bytes that depend on both. */
static void fill(char *p, int size, uint32_t conn, uint32_t seq)
{
    int i;
    memcpy(p, &conn, 4);
    memcpy(p + 4, &seq, 4);
    for (i = 8; i < size; ++i)
        p[i] = (char)(conn * 31 + seq * 7 + (uint32_t)i);
}

/* The client's state per connection. Message `seq` goes out of send buffer seq % WINDOW of its
 * connection; that buffer is busy until the send completes. */
struct client {
    struct options o;
    struct buffers send_buffers, recv_buffers;
    DAT_EP_HANDLE *eps;
    int *sent, *echoed;
    char *slot_busy;
};

/* Sends what connection `c` may send now: while fewer than WINDOW messages await their echo
 * and the next message's send buffer is free again. */
static void send_more(struct client *cl, int c)
{
    int w = cl->o.window;
    while (cl->sent[c] < cl->o.messages && cl->sent[c] - cl->echoed[c] < w) {
        int index = c * w + cl->sent[c] % w;
        DAT_LMR_TRIPLET iov = segment(&cl->send_buffers, index, cl->o.size);
        if (cl->slot_busy[index])
            return; /* its previous send has not completed yet */
        fill((char *)(uintptr_t)iov.virtual_address, cl->o.size, (uint32_t)c, (uint32_t)cl->sent[c]++);
        cl->slot_busy[index] = 1;
        check(dat_ep_post_send(cl->eps[c], 1, &iov, cookie(SEND_BIT | (uint64_t)index), DAT_COMPLETION_DEFAULT_FLAG),
              "dat_ep_post_send");
    }
}

/* Disconnects the first `count` EPs gracefully and waits until each has: the server counts these
 * to know when to stop. */
static void disconnect(struct ia *ia, DAT_EP_HANDLE *eps, int count)
{
    DAT_EVENT event;
    int c;
    for (c = 0; c < count; ++c)
        check(dat_ep_disconnect(eps[c], DAT_CLOSE_GRACEFUL_FLAG), "dat_ep_disconnect");
    for (c = 0; c < count;) {
        if (!next_event(ia->conn_evd, 10 * 1000 * 1000, &event))
            fail("a disconnect did not complete within 10 s");
        if (event.event_number == DAT_CONNECTION_EVENT_DISCONNECTED)
            ++c;
    }
}

static int run_client(const struct options *o)
{
    struct client cl;
    struct ia ia;
    DAT_EP_ATTR attr;
    struct addrinfo hints, *server;
    DAT_EVENT event;
    int c, k, done = 0, w = o->window, slots = o->connections * o->window;
    char *expected = malloc((size_t)o->size);

    memset(&cl, 0, sizeof cl);
    cl.o = *o;
    open_ia(o, &ia, 2 * slots + 8);
    /* Each connection owns WINDOW send and WINDOW receive buffers: buffers c*WINDOW to
     * c*WINDOW+WINDOW-1 of each region. */
    register_buffers(&ia, &cl.send_buffers, slots, o->size);
    register_buffers(&ia, &cl.recv_buffers, slots, o->size);
    cl.eps = calloc((size_t)o->connections, sizeof *cl.eps);
    cl.sent = calloc((size_t)o->connections, sizeof *cl.sent);
    cl.echoed = calloc((size_t)o->connections, sizeof *cl.echoed);
    cl.slot_busy = calloc((size_t)slots, 1);
    if (cl.eps == NULL || cl.sent == NULL || cl.echoed == NULL || cl.slot_busy == NULL || expected == NULL)
        fail("out of memory");

    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_INET;
    if (getaddrinfo(o->host, NULL, &hints, &server) != 0)
        fail("cannot resolve the server's address");

    /* The client's EPs have receive queues of their own, WINDOW deep, for the echoes. */
    memset(&attr, 0, sizeof attr);
    attr.service_type = DAT_SERVICE_TYPE_RC;
    attr.max_message_size = (DAT_SEG_LENGTH)o->size;
    attr.qos = DAT_QOS_BEST_EFFORT;
    attr.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
    attr.request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
    attr.max_recv_dtos = w;
    attr.max_request_dtos = w;
    attr.max_recv_iov = 1;
    attr.max_request_iov = 1;
    for (c = 0; c < o->connections; ++c) {
        check(dat_ep_create(ia.ia, ia.pz, ia.dto_evd, ia.dto_evd, ia.conn_evd, &attr, &cl.eps[c]), "dat_ep_create");
        /* Receives posted before connecting are there for the first echoes. */
        for (k = 0; k < w; ++k) {
            DAT_LMR_TRIPLET iov = segment(&cl.recv_buffers, c * w + k, o->size);
            check(dat_ep_post_recv(cl.eps[c], 1, &iov, cookie((uint64_t)(c * w + k)), DAT_COMPLETION_DEFAULT_FLAG),
                  "dat_ep_post_recv");
        }
        check(dat_ep_connect(cl.eps[c], (DAT_IA_ADDRESS_PTR)server->ai_addr, o->port, 10 * 1000 * 1000, 0, NULL,
                             DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG), "dat_ep_connect");
        if (!next_event(ia.conn_evd, 10 * 1000 * 1000, &event))
            fail("no answer to a connection request within 10 s");
        if (event.event_number != DAT_CONNECTION_EVENT_ESTABLISHED) {
            const DAT_CONNECTION_EVENT_DATA *data = &event.event_data.connect_event_data;
            int takes = 0;
            if (event.event_number == DAT_CONNECTION_EVENT_PEER_REJECTED && data->private_data_size > 0 &&
                strncmp((const char *)data->private_data, FULL_TEXT, strlen(FULL_TEXT)) == 0)
                takes = atoi((const char *)data->private_data + strlen(FULL_TEXT));
            if (takes > 0)
                fprintf(stderr, "srq_echo: connection %d of %d rejected: the server takes %d connections (its -c %d); "
                                "give both sides the same -c\n", c + 1, o->connections, takes, takes);
            else
                fprintf(stderr, "srq_echo: connection %d to %s port %u: %s\n", c, o->host, o->port,
                        connection_event_name(event.event_number));
            /* Leave the server the connections it accepted cleanly, so it ends and says why. */
            disconnect(&ia, cl.eps, c);
            return 1;
        }
    }
    freeaddrinfo(server);

    /* Fill every window; then each completion may let its connection send more. */
    for (c = 0; c < o->connections; ++c)
        send_more(&cl, c);
    while (done < o->connections) {
        const DAT_DTO_COMPLETION_EVENT_DATA *dto = &event.event_data.dto_completion_event_data;
        int index;
        if (!next_event(ia.dto_evd, 10 * 1000 * 1000, &event))
            fail("no completion within 10 s");
        check_completion(&event);
        index = (int)(dto->user_cookie.as_64 & ~SEND_BIT);
        c = index / w;
        if (dto->user_cookie.as_64 & SEND_BIT) {
            cl.slot_busy[index] = 0; /* the send buffer is ours again */
            send_more(&cl, c);
            continue;
        }
        /* An echo: the messages of a connection come back in the order they went. */
        fill(expected, o->size, (uint32_t)c, (uint32_t)cl.echoed[c]);
        if (dto->transfered_length != (DAT_SEG_LENGTH)o->size ||
            memcmp(cl.recv_buffers.memory + (size_t)index * (size_t)o->size, expected, (size_t)o->size) != 0) {
            fprintf(stderr, "srq_echo: connection %d: echo %d differs from what was sent\n", c, cl.echoed[c]);
            return 1;
        }
        if (++cl.echoed[c] == o->messages) {
            ++done;
            continue;
        }
        {
            DAT_LMR_TRIPLET iov = segment(&cl.recv_buffers, index, o->size);
            check(dat_ep_post_recv(cl.eps[c], 1, &iov, dto->user_cookie, DAT_COMPLETION_DEFAULT_FLAG),
                  "dat_ep_post_recv");
        }
        send_more(&cl, c);
    }
    printf("srq_echo client: %d connections x %d messages of %d bytes echoed, every byte checked\n",
           o->connections, o->messages, o->size);

    disconnect(&ia, cl.eps, o->connections);
    /* Abrupt close frees the rest: EPs (their unused receives flushed), LMRs, EVDs, the PZ. */
    check(dat_ia_close(ia.ia, DAT_CLOSE_ABRUPT_FLAG), "dat_ia_close");
    return 0;
}

int main(int argc, char **argv)
{
    struct options o;
    memset(&o, 0, sizeof o);
    if (!parse_options(argc, argv, &o)) {
        fprintf(stderr, "usage: srq_echo server [-P IA] [-p PORT] [-c CONNECTIONS] [-w WINDOW] [-s SIZE]\n"
                        "       srq_echo client HOST [-P IA] [-p PORT] [-c CONNECTIONS] [-w WINDOW] [-s SIZE]"
                        " [-n MESSAGES]\n");
        return 2;
    }
    return o.server ? run_server(&o) : run_client(&o);
}
