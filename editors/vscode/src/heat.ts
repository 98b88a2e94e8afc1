/** How strongly a line is drawn: a level from its share of the file's samples (pure, for tests). */

export const LEVELS = 5;

/** Lines below this fraction of the hottest line are not drawn: a few stray samples are noise, not heat. */
export const MIN_RELATIVE = 0.02;

/** Level 1..LEVELS of a line, relative to the hottest line of its file (0: not drawn). */
export function heatLevel(share: number, maxShare: number): number {
  if (!(share > 0) || !(maxShare > 0) || share / maxShare < MIN_RELATIVE) {
    return 0;
  }
  return Math.max(1, Math.min(LEVELS, Math.ceil((share / maxShare) * LEVELS)));
}
