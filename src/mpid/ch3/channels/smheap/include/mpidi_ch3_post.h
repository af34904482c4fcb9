/*
 * ch3:smheap -- definitions ch3 needs once its own types are complete.
 */

#ifndef MPIDI_CH3_POST_H_INCLUDED
#define MPIDI_CH3_POST_H_INCLUDED

#define MPIDI_CH3_Progress_start(progress_state_) \
    ((progress_state_)->ch.completion_count =     \
     MPL_atomic_relaxed_load_int(&MPIDI_CH3I_progress_completion_count))
#define MPIDI_CH3_Progress_end(progress_state_)

int MPIDI_CH3I_Progress(MPID_Progress_state * progress_state, int blocking);
#define MPIDI_CH3_Progress_test() MPIDI_CH3I_Progress(NULL, FALSE)
#define MPIDI_CH3_Progress_wait(progress_state) MPIDI_CH3I_Progress(progress_state, TRUE)
#define MPIDI_CH3_Progress_poke() MPIDI_CH3I_Progress(NULL, FALSE)

/* Partitioned communication (src/ch3_part.c). */
int MPIDI_CH3_Part_start(MPIR_Request * req);
void MPIDI_CH3_Part_request_free_hook(MPIR_Request * req);

#endif /* MPIDI_CH3_POST_H_INCLUDED */
