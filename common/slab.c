/*
 * Fixed-size objects in pages of their own. A burst of requests makes
 * many short-lived objects (exchanges, connection attempts) at the same
 * time as the long-lived ones of the connections that stay open; from
 * one heap they leave holes between those survivors that the heap
 * cannot give back. A slab keeps each kind in aligned 64 KiB chunks
 * mapped for it. A chunk whose objects are all freed waits on a spare
 * list until slab_trim, which the owner calls from a timer, unmaps it:
 * a load that empties and refills chunks many times a second reuses
 * them without mapping, zeroing and faulting pages in again, and a
 * finished burst is given back within one tick. Slots are handed out in
 * address order from a chunk that has never been full, so untouched
 * pages stay unbacked. Under AddressSanitizer free slots and the gap after each
 * object are poisoned, so a use after free or an overflow into the next
 * slot is still reported.
 */
#include <stdint.h>
#include <string.h>

#include <sys/mman.h>

#include "common.h"

#if defined(__SANITIZE_ADDRESS__)
#define SLAB_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SLAB_ASAN 1
#endif
#endif

#ifdef SLAB_ASAN
#include <sanitizer/asan_interface.h>
#define SLAB_REDZONE        32
#define SLAB_POISON(p, n)   ASAN_POISON_MEMORY_REGION((p), (n))
#define SLAB_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define SLAB_REDZONE        0
#define SLAB_POISON(p, n)   ((void)(p), (void)(n))
#define SLAB_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define SLAB_ALIGN 16

struct slab_chunk {
	struct slab *slab;
	struct slab_chunk *prev, *next; /* in the slab's list of chunks with room */
	void *free;                     /* freed slots, each holding the next */
	size_t used;                    /* live objects */
	size_t fresh;                   /* slots never handed out start here */
	int listed;
};

/* Where a chunk's first slot starts. */
static size_t
slab_first(void)
{
	return (sizeof(struct slab_chunk) + SLAB_ALIGN - 1) & ~(size_t)(SLAB_ALIGN - 1);
}

void
slab_init(struct slab *s, size_t size)
{
	memset(s, 0, sizeof *s);
	s->size = size;
	s->stride = ((size + SLAB_ALIGN - 1) & ~(size_t)(SLAB_ALIGN - 1)) + SLAB_REDZONE;
	if (s->stride > (SLAB_CHUNK - slab_first()) / 4)
		fatalx("slab_init: %zu-byte objects do not fit a %u-byte chunk", size, SLAB_CHUNK);
	s->per_chunk = (SLAB_CHUNK - slab_first()) / s->stride;
}

/* A new chunk aligned to its size, so a pointer finds its chunk by masking. */
static struct slab_chunk *
slab_chunk_new(struct slab *s)
{
	struct slab_chunk *k;
	uintptr_t base, start;
	char *m;

	m = mmap(NULL, 2 * (size_t)SLAB_CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
	         -1, 0);
	if (m == MAP_FAILED)
		fatal("slab: mmap %u", 2 * SLAB_CHUNK);
	base = (uintptr_t)m;
	start = (base + SLAB_CHUNK - 1) & ~(uintptr_t)(SLAB_CHUNK - 1);
	if (start > base)
		munmap(m, start - base);
	if (start + SLAB_CHUNK < base + 2 * (size_t)SLAB_CHUNK)
		munmap((char *)start + SLAB_CHUNK,
		       base + 2 * (size_t)SLAB_CHUNK - start - SLAB_CHUNK);
	k = (struct slab_chunk *)start;
	memset(k, 0, sizeof *k);
	k->slab = s;
	SLAB_POISON((char *)k + slab_first(), SLAB_CHUNK - slab_first());
	s->nchunks++;
	return k;
}

static void
slab_list(struct slab *s, struct slab_chunk *k)
{
	k->prev = NULL;
	k->next = s->avail;
	if (s->avail != NULL)
		s->avail->prev = k;
	s->avail = k;
	k->listed = 1;
}

static void
slab_unlist(struct slab *s, struct slab_chunk *k)
{
	if (k->prev != NULL)
		k->prev->next = k->next;
	else
		s->avail = k->next;
	if (k->next != NULL)
		k->next->prev = k->prev;
	k->prev = k->next = NULL;
	k->listed = 0;
}

/* A zeroed object; aborts when no memory can be mapped, as xcalloc does. */
void *
slab_alloc(struct slab *s)
{
	struct slab_chunk *k;
	char *p;

	if ((k = s->avail) == NULL) {
		if ((k = s->spare) != NULL) {
			s->spare = k->next;
			s->nspare--;
		} else
			k = slab_chunk_new(s);
		slab_list(s, k);
	}
	if ((p = k->free) != NULL) {
		SLAB_UNPOISON(p, sizeof(void *));
		memcpy(&k->free, p, sizeof(void *));
	} else
		p = (char *)k + slab_first() + k->fresh++ * s->stride;
	k->used++;
	if (k->free == NULL && k->fresh == s->per_chunk)
		slab_unlist(s, k);
	s->live++;
	SLAB_UNPOISON(p, s->size);
	memset(p, 0, s->size);
	return p;
}

void
slab_free(struct slab *s, void *obj)
{
	struct slab_chunk *k;

	if (obj == NULL)
		return;
	k = (struct slab_chunk *)((uintptr_t)obj & ~(uintptr_t)(SLAB_CHUNK - 1));
	if (k->slab != s || k->used == 0)
		fatalx("slab_free: %p is not a live object of this slab", obj);
	memcpy(obj, &k->free, sizeof(void *));
	SLAB_POISON(obj, s->stride);
	k->free = obj;
	k->used--;
	s->live--;
	if (k->used > 0) {
		if (!k->listed)
			slab_list(s, k);
		return;
	}
	/* Empty: a spare until the next slab_trim. */
	if (k->listed)
		slab_unlist(s, k);
	k->free = NULL;
	k->fresh = 0;
	k->next = s->spare;
	s->spare = k;
	s->nspare++;
}

/* Unmap the empty chunks beyond keep. */
void
slab_trim(struct slab *s, size_t keep)
{
	struct slab_chunk *k;

	while (s->nspare > keep && (k = s->spare) != NULL) {
		s->spare = k->next;
		s->nspare--;
		s->nchunks--;
		SLAB_UNPOISON(k, SLAB_CHUNK);
		munmap(k, SLAB_CHUNK);
	}
}

/* Unmap every empty chunk; objects still live keep theirs. */
void
slab_release(struct slab *s)
{
	slab_trim(s, 0);
}
