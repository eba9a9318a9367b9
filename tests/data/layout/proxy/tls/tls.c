/* The one violation: tls includes the proxy above it. */
#include "tls.h"
#include "proxy.h"
