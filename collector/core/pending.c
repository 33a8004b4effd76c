/*
 * pending.c - call paths that have a stack id and wait for their definition.
 *
 * The thread that meets a call path first numbers it (defs.c) and appends
 * its frames to its own pending list; whoever writes the next chunk drains
 * every list and turns the paths into definitions (defs.c), so no events
 * chunk precedes the definition of an id it uses.  A list is a chain of
 * 256 KiB blocks: appending never copies, and drained blocks go back to a
 * free list for any thread.
 *
 * Lists are per thread (a spinlock each, which only a drain contends for)
 * and kept in an append-only registry (slots.c); an exiting thread leaves
 * its list there, undrained entries and all, for the next thread to take.
 *
 * Lock order: last (after defs); the block free list's mutex is taken with
 * no list lock held.
 */
#include <pthread.h>
#include <string.h>

#include "internal.h"
#include "spin.h"

/* A block of pending call paths: records u32 id, u32 n, u64 ips[n]. */
#define PBLOCK_SIZE (256u << 10)
typedef struct pblock {
	struct pblock *next;
	size_t len;
	uint8_t data[PBLOCK_SIZE - 16];
} pblock;

typedef struct plist {
	stc_slot slot;         /* its lock, in the registry (slots.c) */
	pblock *head, *tail;   /* a chain of blocks, appended at the tail */
} plist;

static stc_slot *_Atomic registry;
static STC_TLS plist *t_list;
static pthread_mutex_t free_mu = PTHREAD_MUTEX_INITIALIZER;
static pblock *block_free;

static pblock *block_get(void)
{
	pthread_mutex_lock(&free_mu);
	pblock *k = block_free;
	if (k)
		block_free = k->next;
	pthread_mutex_unlock(&free_mu);
	if (!k)
		k = stc_mem_alloc(sizeof *k);
	if (k) {
		k->next = NULL;
		k->len = 0;
	}
	return k;
}

static void block_put_chain(pblock *k)
{
	if (!k)
		return;
	pblock *last = k;
	while (last->next)
		last = last->next;
	pthread_mutex_lock(&free_mu);
	last->next = block_free;
	block_free = k;
	pthread_mutex_unlock(&free_mu);
}

/* The calling thread's list: an exited thread's, else a new one. */
static plist *list_self(void)
{
	plist *l = t_list;
	if (STC_LIKELY(l))
		return l;
	return t_list = (plist *)stc_slot_claim(&registry, sizeof(plist));
}

int stc_pending_add(uint32_t id, const uint64_t *ips, uint32_t n)
{
	plist *l = list_self();
	size_t need = 8 + (size_t)n * 8;
	if (!l || need > sizeof l->tail->data)
		return -1;
	stc_spin_lock(&l->slot.lock);
	pblock *k = l->tail;
	if (!k || k->len + need > sizeof k->data) {
		stc_spin_unlock(&l->slot.lock); /* block_get takes the free list's lock */
		pblock *fresh = block_get();
		if (!fresh)
			return -1;
		stc_spin_lock(&l->slot.lock);
		if (l->tail)
			l->tail->next = fresh;
		else
			l->head = fresh;
		l->tail = k = fresh;
	}
	memcpy(k->data + k->len, &id, 4);
	memcpy(k->data + k->len + 4, &n, 4);
	memcpy(k->data + k->len + 8, ips, (size_t)n * 8);
	k->len += need;
	stc_spin_unlock(&l->slot.lock);
	return 0;
}

/* The chain is taken under the lock and worked on outside it, so the
 * thread never waits for the definitions of a long backlog. */
void stc_pending_drain(int try_only, void (*fn)(uint32_t id, const uint64_t *ips, uint32_t n))
{
	for (plist *l = (plist *)atomic_load(&registry); l; l = (plist *)l->slot.next) {
		if (try_only ? !stc_spin_trylock(&l->slot.lock) : (stc_spin_lock(&l->slot.lock), 0))
			continue;
		pblock *chain = l->head;
		l->head = l->tail = NULL;
		stc_spin_unlock(&l->slot.lock);
		for (pblock *k = chain; k; k = k->next)
			for (size_t at = 0; at + 8 <= k->len;) {
				uint32_t id, n;
				memcpy(&id, k->data + at, 4);
				memcpy(&n, k->data + at + 4, 4);
				fn(id, (const uint64_t *)(const void *)(k->data + at + 8), n);
				at += 8 + (size_t)n * 8;
			}
		fn(0, NULL, 0); /* the chain's frames are given back below */
		if (!try_only)
			block_put_chain(chain); /* a signal handler leaves them */
	}
}

void stc_pending_thread_exit(void)
{
	plist *l = t_list;
	if (!l)
		return;
	t_list = NULL;
	atomic_store(&l->slot.owned, 0);
}

/* In a fork child: this thread is the only one, and the parent defines its
 * own pending paths; the other threads' lists are free for new threads. */
void stc_pending_atfork_child(void)
{
	pthread_mutex_init(&free_mu, NULL);
	for (plist *l = (plist *)atomic_load(&registry); l; l = (plist *)l->slot.next) {
		atomic_store(&l->slot.lock, 0);
		l->head = l->tail = NULL;
		if (l != t_list)
			atomic_store(&l->slot.owned, 0);
	}
}
