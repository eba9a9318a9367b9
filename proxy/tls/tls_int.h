/*
 * Between the two halves of interception: tls.c (the CA, the contexts,
 * the handshakes' set-up) and tlsio.c (the socket under every TLS
 * bufferevent). The rest of the proxy sees only the tls_* entry points
 * of proxy.h.
 */
#ifndef TLS_INT_H
#define TLS_INT_H

#include <sys/queue.h>

#include <openssl/ssl.h>

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>

/* tlsio.c */
struct tlsio;
TAILQ_HEAD(tlsio_list, tlsio); /* sockets still writing out after their filter went */
struct bufferevent *tlsio_bev_new(struct event_base *, int, SSL *, enum bufferevent_ssl_state, int,
                                  struct tlsio_list *);
void tlsio_ex_free_cb(void *, void *, CRYPTO_EX_DATA *, int, long, void *);
void tlsio_list_free(struct tlsio_list *);

#endif
