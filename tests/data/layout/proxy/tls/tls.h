/* Allowed: tls includes policy. */
#include "policy.h"
