/*
 * symbolize_symtab.c - a module's function symbols, sorted for address search.
 *
 * Owns: reading STT_FUNC / STT_GNU_IFUNC symbols (and untyped symbols in
 * executable sections, which hand-written assembly leaves) from .symtab and
 * .dynsym, choosing one name per address, and finding the symbol that
 * contains a pc by binary search.
 *
 * Invariants after sym_symtab_finish(): v is sorted by addr with one entry
 * per address; max_end[i] is the largest end (addr+size, or addr+1 for
 * unsized symbols) of v[0..i], so a search can stop walking back as soon
 * as no earlier symbol can reach pc.  An unsized symbol covers pc up to the
 * next symbol only.
 */
#include <stdlib.h>
#include <string.h>

#include "symbolize_int.h"

static int push(sym_symtab *t, const sym_symbol *s)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 1024;
		sym_symbol *v = realloc(t->v, cap * sizeof(*v));

		if (!v)
			return -1;
		t->v = v;
		t->cap = cap;
	}
	t->v[t->n++] = *s;
	t->sorted = 0;
	return 0;
}

/* Higher wins: typed, global, sized, fewer leading underscores (malloc
 * over __libc_malloc), then the shorter name. */
static uint32_t score_of(const GElf_Sym *sym, const char *name)
{
	unsigned type = GELF_ST_TYPE(sym->st_info), bind = GELF_ST_BIND(sym->st_info);
	uint32_t sc = 0;
	size_t under = 0, len = strlen(name);

	if (type == STT_FUNC || type == STT_GNU_IFUNC)
		sc |= 1u << 20;
	if (bind == STB_GLOBAL)
		sc |= 2u << 18;
	else if (bind == STB_WEAK)
		sc |= 1u << 18;
	if (sym->st_size)
		sc |= 1u << 17;
	while (name[under] == '_')
		under++;
	sc |= (uint32_t)(under > 7 ? 0 : 7 - under) << 14;
	sc |= (uint32_t)(len > 16383 ? 0 : 16383 - len);
	return sc;
}

static int add_table(sym_symtab *t, Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t shnum = 0, count;

	if (!d || !sh->sh_entsize || elf_getshdrnum(elf, &shnum) != 0)
		return 0;
	count = d->d_size / sh->sh_entsize;
	for (size_t i = 1; i < count; i++) {
		GElf_Sym sym;
		const char *name;
		unsigned type;
		sym_symbol s;

		if (!gelf_getsym(d, (int)i, &sym))
			break;
		type = GELF_ST_TYPE(sym.st_info);
		if (sym.st_shndx == SHN_UNDEF || sym.st_value == 0)
			continue;
		if (type == STT_NOTYPE) {
			/* untyped: only in an executable section */
			GElf_Shdr tsh;
			Elf_Scn *ts;

			if (sym.st_shndx >= shnum || sym.st_shndx >= SHN_LORESERVE ||
			    GELF_ST_BIND(sym.st_info) == STB_LOCAL)
				continue;
			ts = elf_getscn(elf, sym.st_shndx);
			if (!ts || !gelf_getshdr(ts, &tsh) || !(tsh.sh_flags & SHF_EXECINSTR))
				continue;
		} else if (type != STT_FUNC && type != STT_GNU_IFUNC) {
			continue;
		}
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		s.addr = sym.st_value;
		s.size = sym.st_size;
		s.name = name;
		s.demangled = NULL;
		s.demangle_done = 0;
		s.score = score_of(&sym, name);
		if (s.addr + s.size < s.addr) /* wraps: a broken size */
			s.size = 0;
		if (push(t, &s))
			return -1;
	}
	return 0;
}

int sym_symtab_add_elf(sym_symtab *t, const sym_elf *e)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e->elf, scn)) != NULL) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if ((sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM) &&
		    add_table(t, e->elf, scn, &sh))
			return -1;
	}
	return 0;
}

static int by_addr_score(const void *a, const void *b)
{
	const sym_symbol *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	if (x->size != y->size)
		return x->size > y->size ? -1 : 1;
	return strcmp(x->name, y->name);
}

int sym_symtab_finish(sym_symtab *t)
{
	size_t w = 0;
	uint64_t m = 0;

	if (t->sorted)
		return 0;
	if (t->n)
		qsort(t->v, t->n, sizeof(*t->v), by_addr_score);
	for (size_t i = 0; i < t->n; i++) {
		if (w && t->v[w - 1].addr == t->v[i].addr) {
			/* same address: keep the best name, the largest size */
			if (t->v[i].size > t->v[w - 1].size && !t->v[w - 1].size)
				t->v[w - 1].size = t->v[i].size;
			continue;
		}
		t->v[w++] = t->v[i];
	}
	t->n = w;
	free(t->max_end);
	t->max_end = malloc((t->n ? t->n : 1) * sizeof(*t->max_end));
	if (!t->max_end)
		return -1;
	for (size_t i = 0; i < t->n; i++) {
		uint64_t end = t->v[i].addr + (t->v[i].size ? t->v[i].size : 1);

		if (end > m)
			m = end;
		t->max_end[i] = m;
	}
	t->sorted = 1;
	return 0;
}

sym_symbol *sym_symtab_find(const sym_symtab *t, uint64_t pc)
{
	size_t lo = 0, hi = t->n;

	if (!t->sorted || !t->n)
		return NULL;
	/* first symbol with addr > pc */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->v[mid].addr <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	/* the nearest unsized symbol below pc covers it (to the next symbol) */
	if (!t->v[lo - 1].size)
		return &t->v[lo - 1];
	for (size_t i = lo; i-- > 0;) {
		if (t->max_end[i] <= pc)
			break;
		if (t->v[i].size && pc < t->v[i].addr + t->v[i].size)
			return &t->v[i];
	}
	return NULL;
}

void sym_symtab_free(sym_symtab *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i].demangled);
	free(t->v);
	free(t->max_end);
	memset(t, 0, sizeof(*t));
}
