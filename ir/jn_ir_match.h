/* jn_ir_match.h -- the replay matcher's program: what `janus optimize`
 * stores as the JN_CG_SEC_MATCHER section of a bundle (written by the
 * analyzer, analyzer/matcher.c; read by replay/match.c).
 *
 * A graph is functional (in-place writes are SSA values, view writes are
 * scatters), but replay sees what the recorder saw: one dispatched op after
 * another, reading and writing tensor OBJECTS.  So per graph the section
 * holds the sequence of RECORDED op tokens, exactly as dispatch will see
 * them, with the loops of the graph as back-edges: per token its op, its
 * attributes as the graph generalized them (int attributes may be symbolic
 * dims of the graph, float attributes may be bound to a scalar input), and
 * where each input tensor comes from.  Sources name graph INPUTS by input
 * index and results by token and output number, never internal value
 * numbers, so the codegen passes (which renumber values but keep inputs
 * and outputs in order, appending only) cannot invalidate them; a token
 * output whose object's final value the graph returns names the graph
 * OUTPUT index (how replay fills the pending tensors Python keeps).
 *
 * A source ("ref") is an object: a graph input (an external tensor), a
 * scalar input (a Python number), or the object token T created with its
 * output K.  For T inside a loop, which iteration's object:
 *   SAME   the reader's own iteration (reader in the same loop) or, for a
 *          token outside loops, the only one
 *   PREV   the previous iteration; in iteration 0 the `init` ref instead
 *          (a loop-carried value)
 *   ABS    iteration c (+ the reader's iteration when flag REL)
 *   END    iteration trip-1-c (- the reader's iteration when flag REL)
 * With flag SEED (ABS or END only), iteration -1 of T's loop is the `init`
 * ref instead: the seed of the carry whose next T's output is (a backward
 * loop reading h[t-1] of its forward loop, the seed for t = 0).
 * A graph input is one tensor (mode SAME), or, read in a loop with mode
 * ABS | REL and c 0 (version 5), a STACKED input: [trip, ...], whose
 * element i is the tensor the reader reads in iteration i, bound there (the
 * per-step values a forward loop's autograd saved, read by its backward
 * loop after a sync); every ref to it is such a read from one loop, or a
 * PREV read there of element i - 1, the `init` ref (a plain input) in
 * iteration 0 (an attention decoder's backward reading h[t] where its
 * cell's backward read h[t - 1] the iteration before), or an END read
 * (c 0) after the loop of its last iteration's element.
 * Matching objects, ops and in-place writes in stream order implies the
 * same functional graph, since functionalization is a function of them.
 *
 * ------------------------------------------------------ byte format
 * Little-endian, fixed width; str = u16 length + bytes.
 *   "JNMT"  u32 version (JN_IR_MATCH_VERSION)  u32 ngraphs
 *   per graph:
 *     u32 graph (index in the module), u8 entry (where its segments
 *     start: 0 a step start, else the JN_SYNC_* kind of the sync before;
 *     a sync that ended an empty segment is skipped over: version 3),
 *     u32 ntok, u32 nloop
 *     per loop:  i32 first token, i32 ntok in body, i64 trip (jn_ir_dim),
 *                i32 ivar symbol, i64 trip lo, i64 trip hi, i32 the IR loop
 *                (its TRIP guard's target; checked against the trip)
 *     per token: str op name, u8 nin, u8 nout, u8 flags (JN_IR_MT_*),
 *                i32 loop (-1), i64 call site,
 *                u8 nattrs, per attr: u8 kind ('i' 'b' 'd': i64; 'L': u8 n,
 *                n x i64; 'f': f64, i32 scalar input bound to it or -1),
 *                per input a ref (flag COLLECT: one ref, the loop token
 *                whose per-iteration objects are ALL the inputs, in order),
 *                per output: u8 new (1: creates an object; 0: writes in
 *                place into the object of the ref that follows; with flag
 *                JN_IR_MO_ALL, version 5: its graph output collects the
 *                object of every iteration, [it] is iteration it's final
 *                value -- per-step values autograd holds across a sync),
 *                [ref], i32 graph output holding the object's final value (-1),
 *                u8 ndim, ndim x i64 (jn_ir_dim): the output's shape as the
 *                graph computes it (the matcher checks the event's against
 *                it: what the graph's code and memory plan assume)
 *   ref: u8 kind (JN_IR_MR_*), i32 a (input index / token), u8 b (output),
 *        u8 mode (JN_IR_MM_* | JN_IR_MM_REL), i64 c,
 *        mode PREV or flag SEED: the init ref follows (never PREV or
 *        REL itself; version 4; of an input ref too, version 5)
 * A graph with no entry has no matcher (it cannot be replayed; optimize
 * says why).
 */
#ifndef JN_IR_MATCH_H
#define JN_IR_MATCH_H

#define JN_IR_MATCH_MAGIC "JNMT"
#define JN_IR_MATCH_VERSION 5 /* 3: an empty segment's sync is no entry (segment.c); 4: SEED; 5: MO_ALL */

enum { JN_IR_MT_INPLACE = 1, JN_IR_MT_COLLECT = 2 };              /* token flags */
enum { JN_IR_MO_NEW = 1, JN_IR_MO_ALL = 2 };                       /* output flags */
enum { JN_IR_MR_INPUT = 0, JN_IR_MR_TOKEN = 1, JN_IR_MR_SCALAR = 2 }; /* ref kinds */
enum { JN_IR_MM_SAME = 0, JN_IR_MM_PREV = 1, JN_IR_MM_ABS = 2, JN_IR_MM_END = 3, JN_IR_MM_REL = 0x10, JN_IR_MM_SEED = 0x20 };

#endif
