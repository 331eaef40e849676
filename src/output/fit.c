/* Fitting text to the terminal (fit.h): its width, table columns, and wrapped lines. Widths
 * count columns as utf8_width does (one per code point). */
#include "output/fit.h"
#include "output/utf8.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define HELP_WIDTH 80    /* --help without a terminal or $COLUMNS */
#define LABEL_COLUMNS 40 /* where a line's label must end for its text to be the hang */

int output_width(int fd)
{
    struct winsize ws;
    if (isatty(fd) && ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    const char *columns = getenv("COLUMNS");
    char *end;
    long n = columns && *columns ? strtol(columns, &end, 10) : 0;
    return n > 0 && n < 100000 && !*end ? (int)n : 0;
}

/* The line's width with the columns not left out at their widths, each flexible one at most
 * cap. */
static int line_width(const int *widths, const unsigned *flags, int ncols, int sep, int cap)
{
    int total = 0, shown = 0;
    for (int c = 0; c < ncols; c++) {
        if (!widths[c])
            continue;
        int w = (flags[c] & OUTPUT_FIT_FLEXIBLE) && widths[c] > cap ? cap : widths[c];
        total += w + (shown++ ? sep : 0);
    }
    return total;
}

/* The highest rank of a column still shown, 0 when none is ranked. */
static int top_rank(const int *widths, const int *drop, int ncols)
{
    int rank = 0;
    for (int c = 0; drop && c < ncols; c++)
        if (widths[c] && drop[c] > rank)
            rank = drop[c];
    return rank;
}

int output_fit_columns(int *widths, const unsigned *flags, const int *drop, int ncols, int sep,
                       int limit, int keep)
{
    int left_out = 0;
    if (limit <= 0)
        return 0;
    /* which columns to leave out: as few ranks as fit with the text cut to `keep` */
    while (line_width(widths, flags, ncols, sep, keep) > limit) {
        int rank = top_rank(widths, drop, ncols);
        if (!rank)
            break;
        for (int c = 0; c < ncols; c++)
            if (widths[c] && drop[c] == rank) {
                widths[c] = 0;
                left_out++;
            }
    }
    /* then the widest text column loses a character, in turn, while the line is too long */
    for (int total = line_width(widths, flags, ncols, sep, INT_MAX); total > limit; total--) {
        int widest = -1;
        for (int c = 0; c < ncols; c++)
            if ((flags[c] & OUTPUT_FIT_FLEXIBLE) && widths[c] > OUTPUT_FIT_MIN &&
                (widest < 0 || widths[c] > widths[widest]))
                widest = c;
        if (widest < 0)
            break;
        widths[widest]--;
    }
    return left_out;
}

static int is_continuation(char c)
{
    return ((unsigned char)c & 0xC0) == 0x80;
}

/* Columns of s[0..n). */
static int columns_of(const char *s, size_t n)
{
    int w = 0;
    for (size_t i = 0; i < n; i++)
        w += !is_continuation(s[i]);
    return w;
}

static size_t lead_of(const char *line, size_t n)
{
    size_t lead = 0;
    while (lead < n && line[lead] == ' ')
        lead++;
    return lead;
}

/* Where the text of an item line (n bytes) starts after its label: after "label: " (a label of
 * one or two words) or after the first gap of two blanks, within LABEL_COLUMNS; 0 for a line
 * that is not an item. */
static int item_text_column(const char *line, size_t n)
{
    size_t lead = lead_of(line, n);
    int words = 1;
    for (size_t j = lead; j + 2 < n && columns_of(line, j) < LABEL_COLUMNS; j++) {
        int label = line[j] == ':' && line[j + 1] == ' ' && words <= 2;
        int gap = line[j] != ' ' && line[j + 1] == ' ' && line[j + 2] == ' ';
        words += line[j] == ' ';
        if (!label && !gap)
            continue;
        size_t k = j + 1;
        while (k < n && line[k] == ' ')
            k++;
        return k < n ? columns_of(line, k) : 0;
    }
    return 0;
}

/* Writes one logical line (n bytes, no newline) broken to width, continuations indented by
 * hang. */
static void wrap_line(FILE *out, const char *line, size_t n, int width, int hang)
{
    if (hang > width / 2)
        hang = 0;
    size_t at = 0;
    int first = 1;
    while (at < n) {
        int room = first ? width : width - hang;
        if (columns_of(line + at, n - at) <= room) {
            fwrite(line + at, 1, n - at, out);
            break;
        }
        /* the last break within the room (after the hang, on the first line), else the first
         * break after it: a blank, or just after a comma */
        size_t limit = at, best = 0, min = at;
        for (int cols = 0; limit < n; limit++)
            if (!is_continuation(line[limit]) && ++cols > room)
                break;
        while (first && min < n && columns_of(line, min) <= hang)
            min++;
        for (size_t i = limit; i > min && !best; i--)
            if (line[i] == ' ' || line[i - 1] == ',')
                best = i;
        for (size_t i = limit; !best && i < n; i++)
            if (line[i] == ' ' || (i > at && line[i - 1] == ','))
                best = i;
        if (!best) {
            fwrite(line + at, 1, n - at, out);
            break;
        }
        size_t end = best;
        while (end > at && line[end - 1] == ' ')
            end--;
        fwrite(line + at, 1, end - at, out);
        fprintf(out, "\n%*s", hang, "");
        at = best;
        while (at < n && line[at] == ' ')
            at++;
        first = 0;
    }
}

/* The next physical line of text[at..len): its length (no newline) and where the one after it
 * starts. */
static size_t next_line(const char *text, size_t at, size_t len, size_t *next)
{
    const char *nl = memchr(text + at, '\n', len - at);
    size_t n = nl ? (size_t)(nl - (text + at)) : len - at;
    *next = at + n + (nl ? 1 : 0);
    return n;
}

void output_wrap(FILE *out, const char *text, size_t len, int width)
{
    size_t at = 0;
    while (at < len) {
        size_t next, n = next_line(text, at, len, &next);
        const char *line = text + at;
        size_t lead = lead_of(line, n), end = next, cont_lead = 0, nc = 0;
        int too_long = width > 0 && columns_of(line, n) > width;
        /* its continuations: the lines indented deeper that are neither items nor headings */
        for (size_t c = next; c < len;) {
            size_t after, m = next_line(text, c, len, &after), l = lead_of(text + c, m);
            if (m == l || l <= lead || item_text_column(text + c, m) || text[c + m - 1] == ':')
                break;
            if (!nc++)
                cont_lead = l;
            too_long |= columns_of(text + c, m) > width;
            end = c = after;
        }
        if (!too_long || width <= 0) { /* as it is */
            fwrite(line, 1, end - at, out);
            at = end;
            continue;
        }
        /* one logical line: the continuations joined by a blank, then broken to the width */
        char *joined = malloc(end - at + 1);
        if (!joined) {
            fwrite(line, 1, end - at, out);
            at = end;
            continue;
        }
        size_t j = 0;
        for (size_t c = at; c < end;) {
            size_t after, m = next_line(text, c, len, &after),
                          l = c == at ? 0 : lead_of(text + c, m);
            if (c != at)
                joined[j++] = ' ';
            memcpy(joined + j, text + c + l, m - l);
            j += m - l;
            c = after;
        }
        int hang = nc ? (int)cont_lead : item_text_column(joined, j);
        wrap_line(out, joined, j, width, hang ? hang : (int)lead);
        free(joined);
        if (text[end - 1] == '\n')
            putc('\n', out);
        at = end;
    }
}

void output_print_wrapped(void (*print)(FILE *out), FILE *to)
{
    char *text = NULL;
    size_t len = 0;
    FILE *buffer = open_memstream(&text, &len);
    if (!buffer) {
        print(to);
        return;
    }
    print(buffer);
    fclose(buffer);
    int width = output_width(fileno(to));
    output_wrap(to, text, len, width ? width : HELP_WIDTH);
    free(text);
}
