/*
 * What graphql.c (the document lexer and parser) shares with
 * graphql_http.c (how requests carry documents).
 */
#ifndef GRAPHQL_INT_H
#define GRAPHQL_INT_H

#include "policy_int.h"

/* graphql.c */
void graphql_result_set(struct gql_result *, enum gql_op, const char *);
void graphql_merge(struct gql_result *, const struct gql_result *);
int graphql_is_name_char(int);
int graphql_looks_like(const char *, size_t);

#endif
