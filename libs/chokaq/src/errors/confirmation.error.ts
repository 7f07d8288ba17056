import { ChokaQError } from './chokaq.error';

/** Why a confirmed bulk action refused to run. @publicApi */
export type ConfirmationFailure = 'invalid' | 'expired' | 'count-changed' | 'used';

/**
 * A bulk action by filter (`resurrectByFilter`, `purgeDlqByFilter` of `ChokaQAdmin`) refused to
 * run, having changed nothing: its confirmation token is not one a preview of this action and
 * filter issued (`invalid`), is older than 5 minutes (`expired`), already confirmed an action
 * (`used`: a token confirms one action, even one still running), or the rows the action would now
 * affect differ from the previewed count by more than the tolerance (`count-changed`). Preview
 * again, check what the new preview says, and act with its token.
 *
 * @publicApi
 */
export class ChokaQConfirmationError extends ChokaQError {
  constructor(
    readonly reason: ConfirmationFailure,
    /** Rows the preview said the action would affect (null when the token is invalid). */
    readonly previewed: number | null = null,
    /** Rows it would affect now (`count-changed` only). */
    readonly current: number | null = null,
  ) {
    super(ChokaQConfirmationError.describe(reason, previewed, current));
  }

  private static describe(
    reason: ConfirmationFailure,
    previewed: number | null,
    current: number | null,
  ): string {
    switch (reason) {
      case 'invalid':
        return 'The confirmation token was not issued by a preview of this action and filter. Nothing was changed; preview again and pass its token.';
      case 'expired':
        return 'The confirmation token expired (a preview is valid for 5 minutes). Nothing was changed; preview again.';
      case 'used':
        return 'The confirmation token already confirmed an action (a token confirms one). Nothing was changed; preview again.';
      case 'count-changed':
        return (
          `The action would now affect ${current} row(s), the preview said ${previewed}, beyond the tolerance. ` +
          'Nothing was changed; preview again, or allow a tolerance (at most 0.1).'
        );
    }
  }
}
